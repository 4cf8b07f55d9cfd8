// Bundles the webhook server into one minified file: what the image runs, what the image-free mode
// ships in a ConfigMap, and what the tests start. The reconciler (webhook/reconciler/) the same way,
// into reconciler.js with its own notices (RECONCILER-THIRD-PARTY-NOTICES.txt). Next to it: THIRD-PARTY-NOTICES.txt, the license of
// every npm package bundled in (their licenses ask for the notice to travel with the code), and the
// source map for profiles and stack traces, which server.js does not link: the package, the image and
// the ConfigMap ship server.js without the map, and a link to a file that is not there helps no one.
import { build } from 'esbuild';
import * as fs from 'node:fs';
import * as path from 'node:path';

const outdir = 'build/webhook';

// Packages express requires that the server never calls, left out: a call would fail loudly, not silently.
// - iconv-lite's charset tables are 480 KB of the bundle, and only body-parser and raw-body call it: the
//   server reads request bodies itself and never decodes a charset. Left out, the bundle fits a ConfigMap.
// - qs (with side-channel, object-inspect and get-intrinsic behind it, about 50 KB) parses "extended" query
//   strings and urlencoded bodies: the server sets `query parser` to false and reads no form bodies.
// - @opentelemetry/api (21 KB, in both bundles) is read by prom-client only for exemplars, which neither
//   the webhook's nor the reconciler's metrics enable.
const LEFT_OUT = {
  'iconv-lite': ['encodingExists', 'getDecoder', 'getEncoder', 'decode', 'encode'],
  qs: ['parse', 'stringify'],
  '@opentelemetry/api': ['trace', 'context'],
};
const leaveOut = {
  name: 'leave-out-unused-packages',
  setup(builder) {
    const filter = new RegExp(`^(${Object.keys(LEFT_OUT).map((name) => name.replace(/[/@.]/g, '\\$&')).join('|')})$`);
    builder.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'left-out' }));
    builder.onLoad({ filter: /.*/, namespace: 'left-out' }, (args) => ({
      contents:
        `const leftOut = () => { throw new Error('${args.path} is left out of the bundle (webhook/build-bundle.mjs)'); };\n` +
        // Getters: reading any of its exports fails, not only calling one.
        `for (const name of ${JSON.stringify(LEFT_OUT[args.path])}) Object.defineProperty(module.exports, name, { get: leftOut, enumerable: true });\n`,
      loader: 'js',
    }));
  },
};
function writeAtomically(file, contents) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, contents);
  fs.renameSync(temporary, file);
}

async function bundle(entryPoint, name, noticesFile) {
  const result = await build({
    entryPoints: [entryPoint],
    outfile: `${outdir}/${name}`,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: true,
    sourcemap: 'external',
    // Comments marked @license or /*! are moved to <name>.LEGAL.txt; the full notices are written below.
    legalComments: 'linked',
    metafile: true,
    // Written below, each file renamed into place: tests and synths running meanwhile never read half a file.
    write: false,
    plugins: [leaveOut],
    logLevel: 'warning',
  });
  for (const output of result.outputFiles) writeAtomically(output.path, output.contents);

  // Every package with code in the bundle, from the inputs esbuild actually used.
  const packageDirs = new Set();
  for (const input of Object.keys(result.metafile.inputs)) {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match) packageDirs.add(match[1]);
  }
  const notices = [...packageDirs].sort().map((dir) => {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const licenseFile = fs.readdirSync(dir).find((file) => /^(licen[sc]e|copying)(\.|$)/i.test(file));
    const text = licenseFile ? fs.readFileSync(path.join(dir, licenseFile), 'utf8').trim() : `(no license file; package.json says ${manifest.license})`;
    return `${manifest.name}@${manifest.version} (${manifest.license ?? 'unknown license'})\n\n${text}\n`;
  });
  writeAtomically(
    path.resolve(outdir, noticesFile),
    `${name} bundles the following ${notices.length} npm packages. Their licenses follow.\n\n` + notices.join(`\n${'-'.repeat(72)}\n\n`),
  );
}

await bundle('webhook/server/main.ts', 'server.js', 'THIRD-PARTY-NOTICES.txt');
await bundle('webhook/reconciler/main.ts', 'reconciler.js', 'RECONCILER-THIRD-PARTY-NOTICES.txt');
