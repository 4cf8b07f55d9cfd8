// The package as users meet it: `npm pack`'s tarball, installed into a temp consumer project with its
// peer dependencies, then compiled with tsc and run with node. Shared by the tests that need it; the
// tarball is packed once per process (and serialized across processes with a lock directory).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '../..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const PACK_DIR = path.join(os.tmpdir(), 'cdk8s-sidecar-injector-packed');

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  try {
    return execFileSync(command, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const failed = error as { status?: number; stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited with ${failed.status}:\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
  }
}

let packed: string | undefined;

/**
 * `npm pack` of the working tree (prepack builds lib/ and the bundle); returns the tarball's path.
 * Test files of one `node --test` run share one tarball (keyed by the runner's pid), so lib/ and the
 * bundle are rebuilt once, never by two packs at the same time.
 */
export function packTarball(): string {
  if (packed) return packed;
  const runner = testRunnerIdentity();
  const shared = runner ? path.join(PACK_DIR, `run-${runner}.path`) : undefined;
  fs.mkdirSync(PACK_DIR, { recursive: true });
  const lock = path.join(PACK_DIR, `lock`);
  const started = Date.now();
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch {
      if (Date.now() - started > 300_000) throw new Error(`another process has held ${lock} for 5 minutes`);
      execFileSync(process.execPath, ['-e', 'setTimeout(() => {}, 500)']);
    }
  }
  try {
    const earlier = shared && fs.existsSync(shared) ? fs.readFileSync(shared, 'utf8') : '';
    if (earlier && fs.existsSync(earlier)) return (packed = earlier);
    removeFinishedRuns();
    const out = fs.mkdtempSync(path.join(PACK_DIR, 'pack-'));
    const output = run(NPM, ['pack', '--silent', '--pack-destination', out], REPO_ROOT);
    const name = output.trim().split('\n').pop()!;
    packed = path.join(out, name);
    if (!fs.existsSync(packed)) throw new Error(`npm pack printed ${name}, but ${packed} does not exist`);
    if (shared) fs.writeFileSync(shared, packed);
    return packed;
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

/** The required peer dependencies (not the optional cluster client) at the versions this repository builds against (its devDependencies). */
export function peerDependencies(): Record<string, string> {
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
  const optional = (name: string) => manifest.peerDependenciesMeta?.[name]?.optional === true;
  return Object.fromEntries(
    Object.keys(manifest.peerDependencies).filter((name) => !optional(name)).map((name) => [name, manifest.devDependencies[name] ?? manifest.peerDependencies[name]]),
  );
}

/**
 * Removes the tarballs of test runs that have ended (their runner's pid is gone or now belongs to
 * another process), so runs do not pile tarballs up in the temp dir. Called under the lock.
 */
function removeFinishedRuns(): void {
  for (const file of fs.readdirSync(PACK_DIR)) {
    const match = /^run-(\d+)-(\d+)\.path$/.exec(file);
    if (!match || runnerAlive(match[1], match[2])) continue;
    const recorded = path.join(PACK_DIR, file);
    const tarball = fs.readFileSync(recorded, 'utf8');
    // Only a directory of our own, never a path someone edited into the file.
    if (path.dirname(path.dirname(tarball)) === PACK_DIR) fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
    fs.rmSync(recorded, { force: true });
  }
}

function runnerAlive(pid: string, startTime: string): boolean {
  return startTimeOf(pid) === startTime;
}

/** A process's start time (field 22 of /proc/<pid>/stat), or undefined when there is no such process or no /proc. */
function startTimeOf(pid: string | number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] || undefined;
  } catch {
    return undefined;
  }
}

/** The parent process (the test runner) as pid and start time, so a later run with a reused pid never
 * picks up this run's tarball; undefined where /proc is not there (each file then packs its own). */
function testRunnerIdentity(): string | undefined {
  const startTime = startTimeOf(process.ppid);
  return startTime ? `${process.ppid}-${startTime}` : undefined;
}

export interface ConsumerProject {
  readonly dir: string;
  /** Runs a command in the project, returning stdout; throws with its output when it fails. */
  run(command: string, args: string[], env?: NodeJS.ProcessEnv): string;
}

/**
 * A new project in `dir` with `files` (relative path -> text), the tarball and the peers installed
 * (from the npm cache when it has them), and a tsconfig that compiles `*.ts` to `out/`.
 */
export function createConsumerProject(dir: string, tarball: string, files: Record<string, string>): ConsumerProject {
  fs.mkdirSync(dir, { recursive: true });
  const peers = peerDependencies();
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, dependencies: { 'cdk8s-sidecar-injector': `file:${tarball}`, ...peers } }, null, 2),
  );
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          module: 'commonjs',
          moduleResolution: 'node',
          strict: true,
          esModuleInterop: true,
          skipLibCheck: false,
          outDir: 'out',
          rootDir: '.',
          // Node's types from this repository: the consumer installs nothing but the package and its peers.
          typeRoots: [path.join(REPO_ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        include: ['*.ts'],
      },
      null,
      2,
    ),
  );
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), text);
  install(dir);
  return { dir, run: (command, args, env) => run(command, args, dir, { ...process.env, ...env }) };
}

/** `npm install` from the npm cache where possible, without scripts (as npm 11 does by default). */
function install(dir: string): void {
  run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], dir);
}

/** Compiles the project with this repository's TypeScript. */
export function compileConsumer(project: ConsumerProject): void {
  project.run(process.execPath, [path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project.dir]);
}

/** A copy of the project's sources (no node_modules, no out/), installed again from its lockfile with `npm ci`. */
export function cloneConsumerProject(project: ConsumerProject, dir: string): ConsumerProject {
  fs.mkdirSync(dir, { recursive: true });
  for (const file of fs.readdirSync(project.dir)) {
    if (file === 'node_modules' || file === 'out') continue;
    fs.cpSync(path.join(project.dir, file), path.join(dir, file), { recursive: true });
  }
  run(NPM, ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], dir);
  return { dir, run: (command, args, env) => run(command, args, dir, { ...process.env, ...env }) };
}
