// The user's side of the bindings tests: one small app per language in test/bindings/apps/<pkg>/, each
// installed the way that language's users install a cdk8s library, run, and its synthesized YAML read back.
// A second package's apps are files in apps/<pkg>/ and an entry in BINDING_APPS; nothing else changes.
import { spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BINDINGS_PACKAGES, BindingTarget, BindingsManifest, REPO_ROOT, bindingsDirs, readManifest } from './bindings-layout';

/** A package with apps: what its bad-props run must tell the user. */
export interface BindingApps {
  /** The package's key in BINDINGS_PACKAGES, and the folder of its apps. */
  readonly key: string;
  /** Arguments that make every app pass a prop the library refuses. */
  readonly badPropsArgs: readonly string[];
  /** What the user must read in each language's error: the prop's path and the reason. */
  readonly badPropsMessage: string;
}

export const BINDING_APPS: readonly BindingApps[] = [
  { key: 'hello', badPropsArgs: ['bad'], badPropsMessage: 'hello.name: "a b" must not contain spaces' },
  {
    key: 'sidecar-injector',
    badPropsArgs: ['bad'],
    badPropsMessage: [
      'invalid props of SidecarInjector "bad/SidecarInjector":',
      '  injections[0].name: "my envoy" must consist of lower case alphanumeric characters or "-", and start and end with an alphanumeric character',
      '  injections[1].containers[0].name: container name "envoy" is already injected by injections[0].containers[0]',
    ].join('\n'),
  },
];

/** The certificate store every app of a package synthesizes with (INJECTOR_CERT_STORE), so all write the same certificates. */
export const CERT_STORE = path.join(bindingsDirs.work, 'cert-store');

/**
 * The lines of `stderr` that show `message` (one or more lines) after `prefix` (`RuntimeError: `), as the
 * language prints an uncaught error; Go's panic indents the lines after the first with a tab. Undefined when
 * no line starts the message.
 */
export function shownError(stderr: string, prefix: string, message: string): string | undefined {
  const lines = stderr.split('\n');
  const [first, ...rest] = message.split('\n');
  const at = lines.findIndex((line) => line.endsWith(`${prefix}${first}`));
  if (at < 0) return undefined;
  return [lines[at].slice(lines[at].length - first.length), ...lines.slice(at + 1, at + 1 + rest.length).map((line) => line.replace(/^\t/, ''))].join('\n');
}

export function appsDir(key: string): string {
  return path.join(REPO_ROOT, 'test/bindings/apps', key);
}

/** What a run of an app left: its exit, its output and the files it synthesized (name to content). */
export interface AppRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly synthesized: Record<string, string>;
}

/**
 * The manifest of a package built for the target, or the one line to skip with: the command that builds it.
 */
export function builtBindings(key: string, target: BindingTarget): BindingsManifest | string {
  const command = `npm run bindings:build -- --package ${key}`;
  const manifest = readManifest(key);
  if (!manifest) return `${key}'s bindings are not built: run \`${command}\``;
  if (!manifest[target]) return `${key}'s ${target} binding is not built: run \`${command} --targets ${target}\``;
  if (!fs.existsSync(path.join(manifest.package.dir, '.jsii'))) return `${key}'s jsii build is gone: run \`${command}\``;
  return manifest;
}

/** The first of the candidates (an env variable's value first) that runs `args`; undefined when none does. */
export function findTool(candidates: readonly (string | undefined)[], args: readonly string[]): string | undefined {
  for (const candidate of candidates) {
    if (!candidate) continue;
    const result = spawnSync(candidate, args, { stdio: 'ignore' });
    if (result.status === 0) return candidate;
  }
  return undefined;
}

/** Runs a command to its end; throws with its output when it fails, for a setup step that must not. */
export function mustRun(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  const result = spawnSync(command, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, timeout: 20 * 60_000 });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} (in ${cwd}) ${result.error ? `failed: ${result.error.message}` : `exited with ${result.status ?? result.signal}`}:\n${result.stdout}\n${result.stderr}`);
  }
  return result.stdout;
}

/** Runs an app with CDK8S_OUTDIR set to a new directory, and reads back what it synthesized. */
export function runApp(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): AppRun {
  fs.mkdirSync(bindingsDirs.consumers, { recursive: true });
  const outdir = fs.mkdtempSync(path.join(bindingsDirs.consumers, 'synth-'));
  try {
    const result = spawnSync(command, args, {
      cwd,
      env: { ...process.env, INJECTOR_CERT_STORE: CERT_STORE, ...env, CDK8S_OUTDIR: outdir },
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      timeout: 10 * 60_000,
    });
    const synthesized = Object.fromEntries(fs.readdirSync(outdir).sort().map((file) => [file, fs.readFileSync(path.join(outdir, file), 'utf8')]));
    return { status: result.status, stdout: result.stdout ?? '', stderr: `${result.stderr ?? ''}${result.error ? `\n${result.error.message}` : ''}`, synthesized };
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

/** A directory under consumers/ named for its inputs, made once by `create` (into a temp dir, then renamed). */
export function consumerDir(name: string, inputs: unknown, create: (dir: string) => void): string {
  const hash = crypto.createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 16);
  const dir = path.join(bindingsDirs.consumers, `${name}-${hash}`);
  if (fs.existsSync(dir)) return dir;
  fs.mkdirSync(bindingsDirs.consumers, { recursive: true });
  for (const old of fs.readdirSync(bindingsDirs.consumers)) {
    if (old.startsWith(`${name}-`) && !old.includes('.tmp')) fs.rmSync(path.join(bindingsDirs.consumers, old), { recursive: true, force: true });
  }
  const temporary = fs.mkdtempSync(path.join(bindingsDirs.consumers, `${name}.tmp-`));
  try {
    create(temporary);
    fs.renameSync(temporary, dir);
  } catch (error) {
    fs.rmSync(temporary, { recursive: true, force: true });
    throw error;
  }
  return dir;
}

export function fileHash(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/**
 * The reference: apps/<pkg>/app.ts run with tsx against the jsii build of the package in work/<pkg>, from a
 * project under work/ so that it and the package resolve the one cdk8s in work/node_modules.
 */
export function runTypeScriptApp(manifest: BindingsManifest, args: readonly string[] = []): AppRun {
  const project = fs.mkdtempSync(path.join(bindingsDirs.work, '.ts-app-'));
  try {
    fs.mkdirSync(path.join(project, 'node_modules'));
    fs.symlinkSync(manifest.package.dir, path.join(project, 'node_modules', manifest.package.name));
    fs.copyFileSync(path.join(appsDir(manifest.package.key), 'app.ts'), path.join(project, 'app.ts'));
    return runApp(path.join(REPO_ROOT, 'node_modules/.bin/tsx'), ['app.ts', ...args], project);
  } finally {
    fs.rmSync(project, { recursive: true, force: true });
  }
}

/** The packages whose apps the tests run: those in BINDING_APPS that the harness knows. */
export function bindingAppsToTest(): readonly BindingApps[] {
  return BINDING_APPS.filter((apps) => BINDINGS_PACKAGES[apps.key]);
}

/** A failing comparison in the user's terms: which file differs and its first differing lines. */
export function describeSynthDifference(language: string, got: Record<string, string>, want: Record<string, string>): string {
  const files = [...new Set([...Object.keys(got), ...Object.keys(want)])].sort();
  const lines: string[] = [`${language} synthesized other YAML than the TypeScript app:`];
  for (const file of files) {
    if (got[file] === want[file]) continue;
    if (got[file] === undefined || want[file] === undefined) {
      lines.push(`  ${file}: ${got[file] === undefined ? 'missing' : 'not made by TypeScript'}`);
      continue;
    }
    const a = got[file].split('\n');
    const b = want[file].split('\n');
    const at = a.findIndex((line, i) => line !== b[i]);
    lines.push(`  ${file}, line ${at + 1}: got ${JSON.stringify(a[at])}, TypeScript has ${JSON.stringify(b[at])}`);
  }
  return lines.join('\n');
}
