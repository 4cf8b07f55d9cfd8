// Process plumbing shared by run-benchmarks.ts and soak.ts: the default app synthesized into a temp
// dir and its Deployment materialized the way `npm run webhook` does it, the webhook bundle and the
// baseline started as pinned child processes, readiness polling, /proc readings, the load generator
// as its own pinned process, and cleanup of every child on exit.
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { Yaml } from 'cdk8s';
import { WebhookCertificate, generateWebhookCertificate } from '../../charts/engine';
import { DeployedWebhook, materializeDeployment } from '../../webhook/dev/deployed-mounts';
import type { GeneratorConfig, GeneratorResult } from './load-generator';
import type { PairedConfig, PairedResult } from './paired-load';
import { cpuMsOfStat } from './proc-cpu';
import { freePort } from '../support/webhook-harness';

export { freePort };

export const REPO_ROOT = path.resolve(__dirname, '../..');
export const BUNDLE = path.join(REPO_ROOT, 'build/webhook/server.js');
const TSX_IMPORT = ['--import', 'tsx'];

// ---------------------------------------------------------------------------------------------
// Children and cleanup

const children = new Set<ChildProcess>();
const tempDirs: string[] = [];

function killChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  children.clear();
}

export function cleanupTemp(): void {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

let cleanupInstalled = false;
/** Kills every child and removes temp dirs when this process exits, fails or is interrupted. */
export function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on('exit', () => {
    killChildren();
    cleanupTemp();
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\n${signal}: stopping children\n`);
      process.exit(130);
    });
  }
  process.on('uncaughtException', (error) => {
    process.stderr.write(`${error.stack ?? error}\n`);
    process.exit(1);
  });
  process.on('unhandledRejection', (error) => {
    process.stderr.write(`${(error as Error)?.stack ?? error}\n`);
    process.exit(1);
  });
}

export function makeTempDir(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `injector-bench-${label}-`));
  tempDirs.push(dir);
  return dir;
}

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

// ---------------------------------------------------------------------------------------------
// CPU pinning

export interface Pinning {
  readonly enabled: boolean;
  readonly cores: number;
  readonly reason: string;
  /** Command prefix for the server (core 0) and the generator (core 1); empty when not pinning. */
  readonly server: string[];
  readonly generator: string[];
}

export function detectPinning(): Pinning {
  const cores = os.availableParallelism?.() ?? os.cpus().length;
  let taskset = false;
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
    taskset = true;
  } catch {
    taskset = false;
  }
  if (cores >= 2 && taskset) {
    return { enabled: true, cores, reason: 'servers on core 0, load generator (and this orchestrator) on core 1', server: ['taskset', '-c', '0'], generator: ['taskset', '-c', '1'] };
  }
  return { enabled: false, cores, reason: cores < 2 ? 'one core only: not pinned' : 'taskset not found: not pinned', server: [], generator: [] };
}

/** Pins this process (all its threads) to the generator's core so it does not compete with the server. */
export function pinSelf(pinning: Pinning): void {
  if (!pinning.enabled) return;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  } catch {
    // not fatal: the numbers are just noisier
  }
}

function spawnPinned(prefix: string[], command: string, args: string[], options: Parameters<typeof spawn>[2]): ChildProcess {
  const [file, ...rest] = prefix.length > 0 ? [...prefix, command, ...args] : [command, ...args];
  return track(spawn(file, rest, options));
}

// ---------------------------------------------------------------------------------------------
// /proc

export function readRssKb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
    return match ? Number(match[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** User + system CPU time of `pid`, in milliseconds; NaN once it has exited. */
export function readCpuMs(pid: number): number {
  try {
    return cpuMsOfStat(`/proc/${pid}/stat`);
  } catch {
    return NaN;
  }
}

export function machine(): { cpu: string; cores: number; node: string; os: string; memoryGb: number } {
  let cpu = os.cpus()[0]?.model ?? 'unknown';
  try {
    const info = fs.readFileSync('/proc/cpuinfo', 'utf8');
    cpu = /model name\s*:\s*(.*)/.exec(info)?.[1]?.trim() ?? cpu;
  } catch {
    // keep os.cpus()
  }
  return {
    cpu,
    // The machine's cores, not this (possibly pinned) process's share of them.
    cores: os.cpus().length,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    memoryGb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
  };
}

// ---------------------------------------------------------------------------------------------
// Certificate, synth and the materialized Deployment

/** One certificate for the whole run, written in the layout app/main.ts's certificate store reads. */
export function fixedCertificate(): { certificate: WebhookCertificate; certDir: string } {
  const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
  const certDir = makeTempDir('certs');
  fs.writeFileSync(path.join(certDir, 'ca.crt'), certificate.caCertificate, { mode: 0o600 });
  fs.writeFileSync(path.join(certDir, 'tls.crt'), certificate.certificate, { mode: 0o600 });
  fs.writeFileSync(path.join(certDir, 'tls.key'), certificate.privateKey, { mode: 0o600 });
  return { certificate, certDir };
}

export interface SynthCommandResult {
  readonly wallMs: number;
  readonly outdir: string;
  readonly files: string[];
}

/** `npm run synth` without npm: `node --import tsx app/main.ts` into a temp outdir with a fixed certificate. */
export async function runSynthCommand(certDir: string, pinning: Pinning, timeoutMs = 60_000): Promise<SynthCommandResult> {
  const outdir = makeTempDir('dist');
  const started = performance.now();
  const { code, stdout, stderr } = await runToEnd(
    pinning.server,
    process.execPath,
    [...TSX_IMPORT, 'app/main.ts'],
    { CDK8S_OUTDIR: outdir, SIDECAR_INJECTOR_CERT_DIR: certDir },
    timeoutMs,
  );
  const wallMs = performance.now() - started;
  if (code !== 0) throw new Error(`synth failed (${code}):\n${stdout}${stderr}`);
  const files = fs.readdirSync(outdir).filter((file) => file.endsWith('.k8s.yaml')).map((file) => path.join(outdir, file));
  return { wallMs, outdir, files };
}

/** Times synthDefaultApp inside a child process (after its imports are loaded). */
export async function runSynthInProcess(certDir: string, pinning: Pinning, runs: number, timeoutMs = 60_000): Promise<{ importMs: number; synthMs: number[] }> {
  const outdir = makeTempDir('dist-inproc');
  const { code, stdout, stderr } = await runToEnd(
    pinning.server,
    process.execPath,
    [...TSX_IMPORT, path.join(__dirname, 'synth-timer.ts'), outdir, certDir, String(runs)],
    {},
    timeoutMs,
  );
  if (code !== 0) throw new Error(`in-process synth failed (${code}):\n${stdout}${stderr}`);
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

export function materialize(files: string[], label = 'mounts'): DeployedWebhook & { root: string; caFile: string } {
  const manifests = files.flatMap((file) => Yaml.load(file) as Record<string, any>[]);
  const root = makeTempDir(label);
  const deployed = materializeDeployment(manifests, root);
  const caFile = path.join(root, 'ca.crt');
  fs.writeFileSync(caFile, deployed.caBundle);
  return { ...deployed, root, caFile };
}

// ---------------------------------------------------------------------------------------------
// Servers


export interface RunningServer {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  /** spawn() -> the server's 'listening' log line, ms. */
  readonly listeningMs: number;
  /** spawn() -> first 200 from GET /readyz (polled every 5 ms), ms. */
  readonly readyMs: number;
  /** Log lines the server wrote, and how many were at level warn/error. */
  readonly logs: { lines: number; warnOrError: number; tail: string[] };
  /** SIGTERM (a graceful shutdown, which may include the drain delay) or SIGKILL; resolves on exit. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<number | null>;
}

export interface ServerSpec {
  readonly name: string;
  /** Arguments to `node` (script and flags). */
  readonly nodeArgs: string[];
  readonly env: Record<string, string>;
  readonly port: number;
  /** The webhook's plain-HTTP ops port (/readyz), when the server has one. */
  readonly opsPort?: number;
  readonly caFile: string;
  readonly servername: string;
  /** Sees every line the server writes to stdout (e.g. --trace-gc-nvp output). */
  readonly onLine?: (line: string) => void;
}

/** GET https://127.0.0.1:port/path once; resolves with the status, or 0 when it could not connect. */
export function httpsGet(port: number, requestPath: string, ca: string, servername: string, timeoutMs = 1000): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = https.get({ host: '127.0.0.1', port, path: requestPath, ca, servername, agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve({ status: 0, body: '' }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, body: '' }));
  });
}

/** The status of GET /readyz: on the ops port over plain HTTP for the webhook, over HTTPS for the baseline; 0 when it could not connect. */
export function readyStatus(spec: ServerSpec, ca: string, timeoutMs = 1000): Promise<number> {
  if (spec.opsPort === undefined) return httpsGet(spec.port, '/readyz', ca, spec.servername, timeoutMs).then((result) => result.status);
  const opsPort = spec.opsPort;
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: opsPort, path: '/readyz', agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts a server pinned to the server core; resolves once /readyz answers 200 (bounded). */
export async function startServer(spec: ServerSpec, pinning: Pinning, timeoutMs = 15_000): Promise<RunningServer> {
  const ca = fs.readFileSync(spec.caFile, 'utf8');
  const started = performance.now();
  const child = spawnPinned(pinning.server, process.execPath, spec.nodeArgs, {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', ...spec.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs = { lines: 0, warnOrError: 0, tail: [] as string[] };
  let listeningMs = NaN;
  let buffered = '';
  const onLine = (line: string) => {
    spec.onLine?.(line);
    logs.lines++;
    if (line.includes('"level":"warn"') || line.includes('"level":"error"')) logs.warnOrError++;
    if (logs.tail.length >= 20) logs.tail.shift();
    logs.tail.push(line);
    if (Number.isNaN(listeningMs) && line.includes('"msg":"listening"')) listeningMs = performance.now() - started;
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let newline: number;
    while ((newline = buffered.indexOf('\n')) !== -1) {
      onLine(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    if (logs.tail.length >= 20) logs.tail.shift();
    logs.tail.push(chunk.toString('utf8'));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let exitedEarly = false;
  void exited.then(() => (exitedEarly = true));
  let readyMs = NaN;
  const deadline = started + timeoutMs;
  while (performance.now() < deadline && !exitedEarly) {
    const status = await readyStatus(spec, ca);
    if (status === 200) {
      readyMs = performance.now() - started;
      break;
    }
    await sleep(5);
  }
  if (Number.isNaN(readyMs)) {
    if (!exitedEarly) child.kill('SIGKILL');
    throw new Error(`${spec.name} was not ready within ${timeoutMs} ms; output:\n${logs.tail.join('\n')}`);
  }
  return {
    name: spec.name,
    child,
    pid: child.pid!,
    port: spec.port,
    listeningMs,
    readyMs,
    logs,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** The webhook as `npm run webhook` runs it: the bundle, with the Deployment's environment. */
export async function webhookSpec(deployed: DeployedWebhook & { caFile: string }, extraNodeArgs: string[] = [], bundle = BUNDLE, name = 'webhook'): Promise<ServerSpec> {
  const port = await freePort();
  const opsPort = await freePort();
  return {
    name,
    nodeArgs: [...extraNodeArgs, bundle],
    env: { ...deployed.env, INJECTOR_LISTEN_PORT: String(port), INJECTOR_OPS_PORT: String(opsPort) },
    port,
    opsPort,
    caFile: deployed.caFile,
    servername: deployed.serverName,
  };
}

/** Bundles a test/bench entry point to plain JS, as webhook/build-bundle.mjs bundles the server. */
async function bundleToTemp(entry: string): Promise<string> {
  const { build } = await import('esbuild');
  const outfile = path.join(makeTempDir('bundle'), entry.replace(/\.ts$/, '.js'));
  await build({
    entryPoints: [path.join(__dirname, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    logLevel: 'warning',
  });
  return outfile;
}

/** test/bench/baseline-server.ts bundled to plain JS (so it runs without a TypeScript loader, like the webhook). */
export async function baselineSpec(deployed: DeployedWebhook & { caFile: string }): Promise<ServerSpec> {
  const outfile = await bundleToTemp('baseline-server.ts');
  const port = await freePort();
  return {
    name: 'baseline',
    nodeArgs: [outfile],
    env: { BASELINE_TLS_DIR: deployed.env.INJECTOR_TLS_DIR, BASELINE_PORT: String(port) },
    port,
    caFile: deployed.caFile,
    servername: deployed.serverName,
  };
}

// ---------------------------------------------------------------------------------------------
// Child commands and the load generator

export function runToEnd(
  prefix: string[],
  command: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawnPinned(prefix, command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${timeoutMs} ms)`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a generator script of this directory (its config as JSON on argv, see runAsProcess) as its own
 * process on the generator core, and returns the result from its last line of output. */
async function runGeneratorProcess<R>(script: string, label: string, config: object, limitMs: number, pinning: Pinning): Promise<R> {
  const { code, stdout, stderr } = await runToEnd(pinning.generator, process.execPath, [...TSX_IMPORT, path.join(__dirname, script), JSON.stringify(config)], {}, limitMs);
  if (code !== 0) throw new Error(`${label} failed (${code}):\n${stderr}`);
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

/** Runs test/bench/load-generator.ts as its own process on the generator core. */
export function runLoad(config: GeneratorConfig, pinning: Pinning): Promise<GeneratorResult> {
  return runGeneratorProcess('load-generator.ts', 'load generator', config, (config.warmupSeconds + config.durationSeconds) * 1000 + 60_000, pinning);
}

/** Runs test/bench/paired-load.ts (two servers loaded in turns) as its own process on the generator core. */
export function runPairedLoad(config: PairedConfig, pinning: Pinning): Promise<PairedResult> {
  const limitMs = config.warmupSeconds * 2000 + config.phasesPerServer * 2 * (config.phaseMs + 1000) + 60_000;
  return runGeneratorProcess('paired-load.ts', 'paired load', config, limitMs, pinning);
}

/** Connections the turns at a fixed rate keep to each server (runTurnsAtRate). */
export const TURN_CONNECTIONS = 10;
/** Seconds of turns per server not counted before the turns at a fixed rate (runTurnsAtRate). */
export const TURN_WARMUP_SECONDS = 3;

/** The low-load comparison of `npm run bench` (its paired 500 req/s rows) and `COMPARE_RATE` in bench:compare:
 * two servers in turns of 1 s (A B B A) in one open-loop generator that keeps TURN_CONNECTIONS
 * connections to each, after TURN_WARMUP_SECONDS of turns per server not counted. */
export function runTurnsAtRate(
  servers: readonly [{ port: number; pid: number }, { port: number; pid: number }],
  target: { caFile: string; serverName: string },
  bodyFile: string,
  options: { rate: number; turnsPerServer: number; uniquePods?: boolean; samplesFile?: string },
  pinning: Pinning,
): Promise<PairedResult> {
  return runPairedLoad(
    {
      servers: [
        { port: servers[0].port, pid: servers[0].pid },
        { port: servers[1].port, pid: servers[1].pid },
      ],
      caFile: target.caFile,
      servername: target.serverName,
      bodyFile,
      uniquePods: options.uniquePods ?? false,
      connections: TURN_CONNECTIONS,
      phaseMs: 1000,
      phasesPerServer: options.turnsPerServer,
      warmupSeconds: TURN_WARMUP_SECONDS,
      rate: options.rate,
      ...(options.samplesFile ? { samplesFile: options.samplesFile } : {}),
    },
    pinning,
  );
}

/** Samples a process's RSS every `everyMs` until stopped; returns the samples in kB. */
export function sampleRss(pid: number, everyMs: number): { stop(): number[]; samples: number[] } {
  const samples: number[] = [readRssKb(pid)];
  const timer = setInterval(() => samples.push(readRssKb(pid)), everyMs);
  return {
    samples,
    stop() {
      clearInterval(timer);
      samples.push(readRssKb(pid));
      return samples.filter((value) => Number.isFinite(value));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Per-core CPU use, to tell how much of a core other processes took during a run

export interface CoreSnapshot {
  readonly at: number;
  /** Per core: [busy ticks, steal ticks, total ticks]. */
  readonly cores: [number, number, number][];
}

export function coreSnapshot(): CoreSnapshot {
  const cores: [number, number, number][] = [];
  try {
    for (const line of fs.readFileSync('/proc/stat', 'utf8').split('\n')) {
      const match = /^cpu(\d+)\s+(.*)$/.exec(line);
      if (!match) continue;
      const [user, nice, system, idle, iowait, irq, softirq, steal] = match[2].split(/\s+/).map(Number);
      const busy = user + nice + system + irq + softirq;
      cores[Number(match[1])] = [busy, steal || 0, busy + idle + iowait + (steal || 0)];
    }
  } catch {
    // no /proc/stat: no interference figures
  }
  return { at: performance.now(), cores };
}

/** Busy and stolen percent of each core between two snapshots. */
export function coreUsage(before: CoreSnapshot, after: CoreSnapshot): { busyPercent: number; stealPercent: number }[] {
  return after.cores.map((core, index) => {
    const previous = before.cores[index] ?? [0, 0, 0];
    const total = core[2] - previous[2];
    return total > 0
      ? { busyPercent: ((core[0] - previous[0]) / total) * 100, stealPercent: ((core[1] - previous[1]) / total) * 100 }
      : { busyPercent: NaN, stealPercent: NaN };
  });
}

/** Calls `onLine` with each complete line `stream` writes (a child's stdout), without its newline. */
export function forEachLine(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let buffered = '';
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let newline: number;
    while ((newline = buffered.indexOf('\n')) !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      onLine(line);
    }
  });
}
