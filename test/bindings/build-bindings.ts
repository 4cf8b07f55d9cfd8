// Builds the Python, Java and Go bindings of a jsii library (and the C# code, which is generated only:
// this machine has no dotnet SDK and NuGet is unreachable) the way its release would, into
// ~/.cache/cdk8s-sidecar-injector/bindings/out/<pkg>, for test/bindings/*.bindings.test.ts to install.
//
//   npm run bindings:build [-- --package hello,sidecar-injector (both by default)] [--targets python,java,go,dotnet]
//
// Where each dependency's binding comes from (checked against each registry with its own client):
// - PyPI serves cdk8s 2.68.12, cdk8s-plus-27 2.9.5 and constructs 10.3.0: the Python tests install them
//   from there, beside the wheel built here. Nothing is built locally for Python.
// - Maven Central serves org.cdk8s:cdk8s 2.68.12 and software.constructs:constructs 10.3.0, but no
//   org.cdk8s:cdk8s-plus-27 at all: it is built here with jsii-pacmak from the .jsii in cdk8s-plus-27's
//   npm tarball, into the file:// repository `m2`.
// - The Go module proxy serves github.com/aws/constructs-go/constructs/v10 v10.3.0 and
//   github.com/aws/jsii-runtime-go, but neither github.com/cdk8s-team/cdk8s-core-go/cdk8s/v2 nor
//   github.com/cdk8s-team/cdk8s-plus-go/cdk8splus27/v2 (403, "not available"): both are built here from
//   their npm tarballs' .jsii, into `go/`, which the tests' go.mod reaches by `replace`.
// The npm tarballs are those of the versions in this repository's lockfile (`npm pack name@version`).
import { spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  BINDING_TARGETS,
  BINDINGS_PACKAGES,
  BindingTarget,
  BindingsManifest,
  BindingsPackage,
  REPO_ROOT,
  bindingsDirs,
  manifestPath,
} from './support/bindings-layout';

/** The jsii libraries every package here builds on; their bindings come from the registries or from `DEPENDENCY_GAPS`. */
const JSII_DEPENDENCIES = ['constructs', 'cdk8s', 'cdk8s-plus-27'] as const;

/** The dependencies whose binding the target's registry lacks, so they are generated here (see the head comment). */
const DEPENDENCY_GAPS: Partial<Record<BindingTarget, readonly string[]>> = {
  java: ['cdk8s-plus-27'],
  go: ['cdk8s', 'cdk8s-plus-27'],
};

const BIN = path.join(REPO_ROOT, 'node_modules/.bin');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

type PackageJson = Record<string, any>;

/**
 * The package.json jsii compiles: the real one's jsii block, name, version and entry points, with
 * - optional peerDependencies dropped (`@kubernetes/client-node` is for the CLI, not the constructs, and has no .jsii);
 * - the runtime `dependencies` that are not jsii libraries listed as `bundledDependencies`, which is how jsii
 *   accepts a dependency it cannot carry to other languages (they ship inside the package's tarball);
 * - `.jsii` added to `files`, so the tarball each binding embeds has the assembly;
 * - no scripts: the copy is built by jsii, never by the package's own build.
 * `isJsiiLibrary(name)` says whether a dependency has a .jsii.
 */
export function jsiiViewOfPackageJson(real: PackageJson, isJsiiLibrary: (name: string) => boolean): PackageJson {
  if (!real.jsii) throw new Error(`package.json of ${real.name} has no "jsii" block: jsii cannot build it yet`);
  const optional = new Set(Object.entries(real.peerDependenciesMeta ?? {}).filter(([, meta]: [string, any]) => meta?.optional).map(([name]) => name));
  const peerDependencies = Object.fromEntries(Object.entries(real.peerDependencies ?? {}).filter(([name]) => !optional.has(name)));
  const dependencies: Record<string, string> = real.dependencies ?? {};
  const bundled = Object.keys(dependencies).filter((name) => !isJsiiLibrary(name));
  // jsii wants each peer dependency as a devDependency too (the version it is built against).
  const devDependencies = Object.fromEntries(Object.keys(peerDependencies).map((name) => [name, real.devDependencies?.[name] ?? peerDependencies[name]]));
  const { scripts: _scripts, peerDependenciesMeta: _meta, allowScripts: _allow, devDependencies: _dev, ...kept } = real;
  return {
    ...kept,
    ...(real.files ? { files: [...real.files.filter((entry: string) => entry !== '.jsii'), '.jsii'] } : {}),
    dependencies,
    peerDependencies,
    devDependencies,
    ...(bundled.length > 0 ? { bundledDependencies: bundled } : {}),
  };
}

interface BuildOptions {
  readonly packages: readonly string[];
  readonly targets: readonly BindingTarget[];
}

export function parseArguments(argv: readonly string[]): BuildOptions {
  // Both by default: the toy library proves the harness apart from the package, the package is what users install.
  let packages = ['hello', 'sidecar-injector'];
  let targets: BindingTarget[] = ['python', 'java', 'go', 'dotnet'];
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => inline ?? argv[++i] ?? '';
    if (flag === '--package' || flag === '--packages') packages = value().split(',').filter(Boolean);
    else if (flag === '--targets' || flag === '--target') targets = value().split(',').filter(Boolean) as BindingTarget[];
    else throw new Error(`unknown argument ${argv[i]}; usage: npm run bindings:build -- [--package hello,sidecar-injector] [--targets python,java,go,dotnet]`);
  }
  for (const key of packages) {
    if (!BINDINGS_PACKAGES[key]) throw new Error(`unknown package ${key}; known: ${Object.keys(BINDINGS_PACKAGES).join(', ')}`);
  }
  for (const target of targets) {
    if (!BINDING_TARGETS.includes(target)) throw new Error(`unknown target ${target}; known: ${BINDING_TARGETS.join(', ')}`);
  }
  return { packages, targets };
}

/** Runs one step, its output into logs/<name>.log; on failure throws with the log's tail. */
function runStep(name: string, command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): void {
  fs.mkdirSync(bindingsDirs.logs, { recursive: true });
  const log = path.join(bindingsDirs.logs, `${name}.log`);
  const fd = fs.openSync(log, 'w');
  fs.writeSync(fd, `$ (cd ${cwd} && ${command} ${args.join(' ')})\n`);
  const started = Date.now();
  const result = spawnSync(command, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', fd, fd],
    timeout: 30 * 60_000,
  });
  fs.closeSync(fd);
  if (result.status !== 0) {
    const tail = fs.readFileSync(log, 'utf8').split('\n').slice(-40).join('\n');
    throw new Error(`${name}: ${command} ${args.join(' ')} ${result.error ? `failed: ${result.error.message}` : `exited with ${result.status ?? result.signal}`} (full log: ${log})\n${tail}`);
  }
  console.log(`bindings: ${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

function capture(command: string, args: readonly string[]): string | undefined {
  const result = spawnSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return result.status === 0 ? `${result.stdout}${result.stderr}`.trim() : undefined;
}

/** The toolchain a target builds with, by its own version line; undefined when it is missing. */
function toolchainOf(target: BindingTarget): { missing?: string; version: string } {
  switch (target) {
    case 'python': {
      const version = capture('python3', ['--version']);
      return version ? { version } : { missing: 'python3', version: '' };
    }
    case 'java': {
      const java = capture('java', ['-version']);
      const mvn = capture('mvn', ['-v']);
      if (!java) return { missing: 'java', version: '' };
      if (!mvn) return { missing: 'mvn', version: '' };
      return { version: `${java.split('\n')[0]} ${mvn.split('\n')[0]}` };
    }
    case 'go': {
      const version = capture('go', ['version']);
      return version ? { version } : { missing: 'go', version: '' };
    }
    case 'dotnet':
      return { version: 'code only' };
  }
}

/** Every file under root (less the excludes: relative paths), hashed with its path. */
export function hashTree(root: string, excludes: readonly string[]): string {
  const hash = crypto.createHash('sha256');
  const walk = (relative: string) => {
    for (const entry of fs.readdirSync(path.join(root, relative), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      if (excludes.includes(child)) continue;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) hash.update(`${child}\0`).update(fs.readFileSync(path.join(root, child))).update('\0');
    }
  };
  walk('');
  return hash.digest('hex');
}

function hashOf(value: unknown): string {
  return crypto.createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);
}

/** A step's inputs shared by all: this harness's own code and the jsii tools' versions. */
function harnessInputs(): Record<string, string> {
  return {
    harness: hashOf(['build-bindings.ts', 'support/bindings-layout.ts'].map((file) => fs.readFileSync(path.join(__dirname, file), 'utf8'))),
    jsii: installedVersion('jsii'),
    pacmak: installedVersion('jsii-pacmak'),
  };
}

function installedVersion(name: string): string {
  return JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
}

function stampFile(name: string, inputs: unknown): string {
  return path.join(bindingsDirs.stamps, `${name}-${hashOf(inputs)}`);
}

function writeStamp(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const prefix = path.basename(file).replace(/-[0-9a-f]{16}$/, '-');
  for (const old of fs.readdirSync(path.dirname(file))) if (old.startsWith(prefix)) fs.rmSync(path.join(path.dirname(file), old));
  fs.writeFileSync(file, '');
}

/**
 * work/node_modules/<name> for each jsii dependency: its published npm tarball at the lockfile's version,
 * unpacked. One copy that the package, its bindings' builds and the TypeScript reference app all resolve.
 */
function ensureJsiiDependencies(): Record<string, string> {
  const versions: Record<string, string> = {};
  for (const name of JSII_DEPENDENCIES) {
    const version = installedVersion(name);
    versions[name] = version;
    const dir = path.join(bindingsDirs.work, 'node_modules', name);
    const marker = path.join(dir, '.from-npm-tarball');
    if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === version) continue;
    fs.rmSync(dir, { recursive: true, force: true });
    const download = fs.mkdtempSync(path.join(bindingsDirs.work, '.tarball-'));
    runStep(`npm-pack-${name}`, NPM, ['pack', `${name}@${version}`, '--pack-destination', download, '--silent'], download);
    const tarball = fs.readdirSync(download).find((file) => file.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack ${name}@${version} wrote no tarball into ${download}`);
    fs.mkdirSync(dir, { recursive: true });
    runStep(`unpack-${name}`, 'tar', ['-xzf', path.join(download, tarball), '-C', dir, '--strip-components=1'], dir);
    fs.rmSync(download, { recursive: true, force: true });
    fs.writeFileSync(marker, version);
  }
  return versions;
}

function pacmakEnv(): NodeJS.ProcessEnv {
  // npm 11 and pacmak's `npm pack`: no package's lifecycle scripts (cdk8s-plus-27's prepack runs projen).
  // GOTOOLCHAIN=local: Go never fetches another toolchain for a generated go.mod's `go` line.
  return { npm_config_ignore_scripts: 'true', GOTOOLCHAIN: 'local', MAVEN_OPTS: process.env.MAVEN_OPTS ?? '-Xmx1g' };
}

function mavenLocalArgument(target: BindingTarget): string[] {
  return target === 'java' ? [`--maven-local-repository=${bindingsDirs.mavenLocal}`] : [];
}

/**
 * The bindings of the dependencies the target's registry lacks, generated with jsii-pacmak from their npm
 * tarballs' .jsii, into each dependency's own `dist/<target>` (where jsii-pacmak looks for local builds of a
 * dependency when it builds a dependent), then copied to `m2` (Java) or `go/` (Go) for the tests.
 */
function buildDependencyBindings(target: BindingTarget, versions: Record<string, string>): void {
  const gaps = DEPENDENCY_GAPS[target];
  if (!gaps) return;
  const stamp = stampFile(`deps-${target}`, { ...harnessInputs(), target, versions, toolchain: toolchainOf(target).version });
  const destination = target === 'java' ? bindingsDirs.m2 : bindingsDirs.go;
  if (fs.existsSync(stamp) && fs.existsSync(destination)) {
    console.log(`bindings: ${target} bindings of ${gaps.join(', ')}: up to date (${destination})`);
    return;
  }
  const dirs = gaps.map((name) => path.join(bindingsDirs.work, 'node_modules', name));
  for (const dir of dirs) fs.rmSync(path.join(dir, 'dist', target), { recursive: true, force: true });
  runStep(`deps-${target}`, path.join(BIN, 'jsii-pacmak'), [...dirs, '--targets', target, '--force', ...mavenLocalArgument(target)], bindingsDirs.work, pacmakEnv());
  fs.rmSync(destination, { recursive: true, force: true });
  fs.mkdirSync(destination, { recursive: true });
  for (const dir of dirs) fs.cpSync(path.join(dir, 'dist', target), destination, { recursive: true });
  writeStamp(stamp);
}

/** Copies each bundled dependency and what it depends on, at the same place under node_modules as in the root. */
function copyBundledDependencies(root: string, names: readonly string[], into: string): void {
  const seen = new Set<string>();
  const visit = (name: string, from: string) => {
    let dir = from;
    for (;;) {
      const candidate = path.join(dir, 'node_modules', name);
      if (fs.existsSync(path.join(candidate, 'package.json'))) break;
      if (dir === root || dir === path.dirname(dir)) throw new Error(`bundled dependency ${name} is not installed under ${root}: run npm ci`);
      dir = path.dirname(dir);
    }
    const found = path.join(dir, 'node_modules', name);
    if (seen.has(found)) return;
    seen.add(found);
    fs.cpSync(found, path.join(into, path.relative(root, found)), { recursive: true, dereference: true });
    const manifest = JSON.parse(fs.readFileSync(path.join(found, 'package.json'), 'utf8'));
    for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(dependency, found);
  };
  for (const name of names) visit(name, root);
}

/** work/<pkg>: a copy of the package with the jsii view of its package.json, compiled by jsii. */
function compileWithJsii(spec: BindingsPackage, sourceHash: string, versions: Record<string, string>): { dir: string; manifest: PackageJson } {
  const dir = path.join(bindingsDirs.work, spec.key);
  const stamp = stampFile(`jsii-${spec.key}`, { ...harnessInputs(), sourceHash, versions });
  const real = JSON.parse(fs.readFileSync(path.join(spec.root, 'package.json'), 'utf8'));
  const isJsiiLibrary = (name: string) => fs.existsSync(path.join(bindingsDirs.work, 'node_modules', name, '.jsii')) || hasJsii(spec.root, name);
  const view = jsiiViewOfPackageJson(real, isJsiiLibrary);
  if (fs.existsSync(stamp) && fs.existsSync(path.join(dir, '.jsii'))) {
    console.log(`bindings: jsii ${spec.key}: up to date (${dir})`);
    return { dir, manifest: view };
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(spec.root, dir, {
    recursive: true,
    filter: (source) => !spec.copyExcludes.includes(path.relative(spec.root, source).split(path.sep).join('/')),
  });
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(view, null, 2)}\n`);
  if (view.bundledDependencies) copyBundledDependencies(spec.root, view.bundledDependencies, dir);
  // Type-only packages the sources compile against (@types/node and the like), never shipped.
  const types = path.join(spec.root, 'node_modules', '@types');
  if (fs.existsSync(types)) {
    fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
    fs.symlinkSync(types, path.join(dir, 'node_modules', '@types'));
  }
  // The optional cluster client: the CLI's sources compile against its types, the package never ships it.
  const clusterClient = path.join(spec.root, 'node_modules', '@kubernetes');
  if (fs.existsSync(clusterClient) && !fs.existsSync(path.join(dir, 'node_modules', '@kubernetes'))) {
    fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
    fs.symlinkSync(clusterClient, path.join(dir, 'node_modules', '@kubernetes'));
  }
  runStep(`jsii-${spec.key}`, path.join(BIN, 'jsii'), ['--silence-warnings', 'reserved-word'], dir);
  writeStamp(stamp);
  return { dir, manifest: view };
}

function hasJsii(root: string, name: string): boolean {
  return fs.existsSync(path.join(root, 'node_modules', name, '.jsii'));
}

/** jsii-pacmak for one target of the package, into out/<pkg>/<target>. */
function buildPackageTarget(spec: BindingsPackage, dir: string, target: BindingTarget, inputs: Record<string, unknown>): void {
  const outdir = path.join(bindingsDirs.out, spec.key);
  const stamp = stampFile(`${spec.key}-${target}`, { ...inputs, target, toolchain: toolchainOf(target).version });
  if (fs.existsSync(stamp) && fs.existsSync(path.join(outdir, target))) {
    console.log(`bindings: ${spec.key} ${target}: up to date (${path.join(outdir, target)})`);
    return;
  }
  fs.rmSync(path.join(outdir, target), { recursive: true, force: true });
  // No dotnet SDK here and NuGet is unreachable: the C# is generated, not compiled or packed.
  const codeOnly = target === 'dotnet' ? ['--code-only'] : [];
  runStep(`${spec.key}-${target}`, path.join(BIN, 'jsii-pacmak'), [dir, '--targets', target, '--outdir', outdir, '--force', ...codeOnly, ...mavenLocalArgument(target)], dir, pacmakEnv());
  writeStamp(stamp);
}

/** bindings.json: what the build made, where, and which versions each language's user project pins. */
function writeManifest(spec: BindingsPackage, dir: string, view: PackageJson, versions: Record<string, string>): BindingsManifest {
  const outdir = path.join(bindingsDirs.out, spec.key);
  const targets = view.jsii.targets ?? {};
  const depsManifest = (name: string) => JSON.parse(fs.readFileSync(path.join(bindingsDirs.work, 'node_modules', name, 'package.json'), 'utf8'));
  const manifest: Record<string, any> = {
    package: { key: spec.key, name: view.name, version: view.version, dir },
    dependencies: versions,
    jsiiRuntimeVersion: installedVersion('jsii-pacmak'),
  };
  const pythonDir = path.join(outdir, 'python');
  const wheel = fs.existsSync(pythonDir) ? fs.readdirSync(pythonDir).find((file) => file.endsWith('.whl')) : undefined;
  if (wheel) manifest.python = { wheel: path.join(pythonDir, wheel), distName: targets.python.distName, module: targets.python.module };
  if (fs.existsSync(path.join(outdir, 'java'))) {
    manifest.java = {
      groupId: targets.java.maven.groupId,
      artifactId: targets.java.maven.artifactId,
      version: view.version,
      package: targets.java.package,
      repositories: [path.join(outdir, 'java'), bindingsDirs.m2],
      dependencies: JSII_DEPENDENCIES.map((name) => {
        const maven = depsManifest(name).jsii.targets.java.maven;
        return `${maven.groupId}:${maven.artifactId}:${versions[name]}`;
      }),
    };
  }
  const goDir = path.join(outdir, 'go');
  if (fs.existsSync(goDir)) {
    const replace: Record<string, string> = {};
    const moduleDirs = [
      ...fs.readdirSync(goDir).map((name) => path.join(goDir, name)),
      ...(fs.existsSync(bindingsDirs.go) ? fs.readdirSync(bindingsDirs.go).map((name) => path.join(bindingsDirs.go, name)) : []),
    ].filter((moduleDir) => fs.existsSync(path.join(moduleDir, 'go.mod')));
    for (const moduleDir of moduleDirs) replace[goModuleOf(moduleDir)] = moduleDir;
    const own = moduleDirs[0];
    const goMod = fs.readFileSync(path.join(own, 'go.mod'), 'utf8');
    const require = Object.fromEntries([...goMod.matchAll(/^\s+(\S+) (v\S+)$/gm)].map((match) => [match[1], match[2]]));
    manifest.go = { module: goModuleOf(own), version: `v${view.version}`, replace, require };
  }
  if (fs.existsSync(path.join(outdir, 'dotnet'))) manifest.dotnet = { dir: path.join(outdir, 'dotnet'), codeOnly: true };
  fs.writeFileSync(manifestPath(spec.key), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest as BindingsManifest;
}

function goModuleOf(moduleDir: string): string {
  const match = /^module (\S+)/m.exec(fs.readFileSync(path.join(moduleDir, 'go.mod'), 'utf8'));
  if (!match) throw new Error(`${moduleDir}/go.mod has no module line`);
  return match[1];
}

/** Builds the bindings of one package for the targets asked for whose toolchain is here. */
export function buildBindings(key: string, targets: readonly BindingTarget[]): BindingsManifest {
  const spec = BINDINGS_PACKAGES[key];
  const started = Date.now();
  // A build that fails half way must not leave the tests an older build's manifest to run against.
  fs.rmSync(manifestPath(key), { force: true });
  if (!JSON.parse(fs.readFileSync(path.join(spec.root, 'package.json'), 'utf8')).jsii) {
    throw new Error(`${path.join(spec.root, 'package.json')} has no "jsii" block yet: --package ${key} builds once the package is a jsii library`);
  }
  if (spec.prepare) runStep(`prepare-${key}`, spec.prepare[0], spec.prepare.slice(1), spec.root);
  fs.mkdirSync(bindingsDirs.work, { recursive: true });
  const versions = ensureJsiiDependencies();
  const sourceHash = hashTree(spec.root, spec.copyExcludes);
  const { dir, manifest: view } = compileWithJsii(spec, sourceHash, versions);
  const declared = Object.keys(view.jsii.targets ?? {});
  const inputs = { ...harnessInputs(), sourceHash, versions };
  for (const target of targets) {
    if (!declared.includes(target)) {
      console.log(`bindings: ${key} ${target}: skipped, the package's jsii block declares no ${target} target`);
      continue;
    }
    const toolchain = toolchainOf(target);
    if (toolchain.missing) {
      console.log(`bindings: ${key} ${target}: skipped, ${toolchain.missing} not found`);
      continue;
    }
    buildDependencyBindings(target, versions);
    buildPackageTarget(spec, dir, target, inputs);
  }
  const manifest = writeManifest(spec, dir, view, versions);
  console.log(`bindings: ${key}: done in ${((Date.now() - started) / 1000).toFixed(1)} s; manifest ${manifestPath(key)}`);
  return manifest;
}

if (require.main === module) {
  try {
    const options = parseArguments(process.argv.slice(2));
    for (const key of options.packages) buildBindings(key, options.targets);
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
}
