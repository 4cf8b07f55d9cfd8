// Starts the webhook the ways tests need it (in-process, or the bundled file as its own process) with
// mounted directories laid out as the kubelet lays them out, and talks to it over real TLS.

import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { CONFIG_FILE_NAME, InjectorConfig, WebhookCertificate } from '../../charts/engine';
import { RUNTIME_ENV, TLS_FILES, memoryQuantityBytes } from '../../webhook/config';
import { DeployedWebhook, materializeDeployment, writeAtomicDirectory } from '../../webhook/dev/deployed-mounts';
import { RunningWebhookServer, type WebhookServerSettings, startWebhookServer } from '../../webhook/server/webhook-server';

export const REPO_ROOT = path.resolve(__dirname, '../..');
export const BUNDLE = path.join(REPO_ROOT, 'build/webhook/server.js');
export const TEST_SERVER_NAME = 'sidecar-injector.sidecar-injector.svc';

export interface MountedDirs {
  readonly root: string;
  readonly tlsDir: string;
  readonly configDir: string;
  writeConfig(config: InjectorConfig | string): void;
  writeCertificate(certificate: WebhookCertificate): void;
  cleanup(): void;
}

export function makeMountedDirs(config: InjectorConfig | string, certificate: WebhookCertificate): MountedDirs {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'injector-mounts-'));
  const tlsDir = path.join(root, 'tls');
  const configDir = path.join(root, 'config');
  const dirs: MountedDirs = {
    root,
    tlsDir,
    configDir,
    writeConfig(next) {
      writeAtomicDirectory(configDir, { [CONFIG_FILE_NAME]: typeof next === 'string' ? next : JSON.stringify(next) });
    },
    writeCertificate(material) {
      writeAtomicDirectory(tlsDir, {
        [TLS_FILES.certificate]: material.certificate,
        [TLS_FILES.privateKey]: material.privateKey,
        [TLS_FILES.caCertificate]: material.caCertificate,
      });
    },
    cleanup() {
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
  dirs.writeConfig(config);
  dirs.writeCertificate(certificate);
  return dirs;
}

export interface InProcessWebhook {
  readonly server: RunningWebhookServer;
  readonly dirs: MountedDirs;
  readonly logs: string[];
  readonly port: number;
  /** The plain-HTTP port of /healthz, /readyz and /metrics. */
  readonly opsPort: number;
  stop(): Promise<void>;
}

export async function startInProcess(
  config: InjectorConfig | string,
  certificate: WebhookCertificate,
  overrides: { requestTimeoutSeconds?: number; shutdownTimeoutSeconds?: number; logLevel?: 'debug' | 'info'; maxConnections?: number; apiserver?: WebhookServerSettings['apiserver']; namespaceSyncWaitMs?: number } = {},
): Promise<InProcessWebhook> {
  const dirs = makeMountedDirs(config, certificate);
  const logs: string[] = [];
  const server = await startWebhookServer({
    listenPort: 0,
    opsPort: 0,
    listenHost: '127.0.0.1',
    maxConnections: overrides.maxConnections,
    tlsDir: dirs.tlsDir,
    configDir: dirs.configDir,
    logLevel: overrides.logLevel ?? 'info',
    shutdownTimeoutSeconds: overrides.shutdownTimeoutSeconds ?? 5,
    requestTimeoutSeconds: overrides.requestTimeoutSeconds ?? 30,
    // Never the machine's own service account: a test that wants an apiserver names one.
    apiserver: overrides.apiserver ?? 'no apiserver in this test',
    namespaceSyncWaitMs: overrides.namespaceSyncWaitMs,
    namespaceWatch: { minBackoffMs: 10, maxBackoffMs: 100 },
    // The logger writes batches of lines; tests look at them one line at a time.
    writeLog: (text) => logs.push(...text.split('\n').filter(Boolean).map((line) => line + '\n')),
  });
  return {
    server,
    dirs,
    logs,
    port: server.port,
    opsPort: server.opsPort,
    async stop() {
      await server.shutdown();
      dirs.cleanup();
    },
  };
}

export interface BundledWebhook {
  readonly child: ChildProcess;
  readonly port: number;
  /** The plain-HTTP port of /healthz, /readyz and /metrics. */
  readonly opsPort: number;
  readonly logs: string[];
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts build/webhook/server.js (what the image runs) with `env`; resolves once it listens (it takes
 * a second or two; the deadline is for a loaded machine). */
export async function startBundled(env: Record<string, string>, timeoutMs = 30_000): Promise<BundledWebhook> {
  if (!fs.existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "npm run bundle" first`);
  const child = spawn(process.execPath, [BUNDLE], {
    env: { PATH: process.env.PATH ?? '', [RUNTIME_ENV.listenPort]: '0', [RUNTIME_ENV.opsPort]: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const { port, opsPort } = await new Promise<{ port: number; opsPort: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`webhook did not start within ${timeoutMs} ms; logs:\n${logs.join('')}`)), timeoutMs);
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        const line = buffered.slice(0, newline + 1);
        buffered = buffered.slice(newline + 1);
        logs.push(line);
        try {
          const entry = JSON.parse(line);
          if (entry.msg === 'listening') {
            clearTimeout(timer);
            resolve({ port: entry.port, opsPort: entry.opsPort });
          }
        } catch {
          // not JSON: kept in logs
        }
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`webhook exited with ${code} before listening; logs:\n${logs.join('')}`));
    });
  });
  return {
    child,
    port,
    opsPort,
    logs,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** One JSON log line of the webhook; `time` is the server's own clock at the call. */
export interface LogEntry {
  readonly time: string;
  readonly level: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** The JSON lines a bundled webhook has written so far. */
export function logEntries(webhook: BundledWebhook): LogEntry[] {
  return webhook.logs.flatMap((line) => {
    try {
      return [JSON.parse(line) as LogEntry];
    } catch {
      return [];
    }
  });
}

/** The first line with `msg`, once the webhook has written it. */
export function logged(webhook: BundledWebhook, msg: string, timeoutMs = 30_000): Promise<LogEntry> {
  return until(`the webhook to log "${msg}"`, timeoutMs, async () => logEntries(webhook).find((entry) => entry.msg === msg));
}

/** When the webhook logged `msg` first, by its own clock (ms since the epoch); NaN if it has not. */
export function loggedAt(webhook: BundledWebhook, msg: string): number {
  return Date.parse(logEntries(webhook).find((entry) => entry.msg === msg)?.time ?? 'never');
}

export interface HttpsResult {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  json<T = any>(): T;
}

export interface RequestOptions {
  readonly ca: string;
  readonly servername?: string;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly agent?: https.Agent;
}

/** One HTTPS request to 127.0.0.1:port, trusting only `ca`, presenting `servername` for SNI and checks. */
export function httpsRequest(port: number, requestPath: string, body: string | Buffer | undefined, options: RequestOptions): Promise<HttpsResult> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: requestPath,
        method: options.method ?? (body === undefined ? 'GET' : 'POST'),
        ca: options.ca,
        servername: options.servername ?? TEST_SERVER_NAME,
        agent: options.agent ?? false,
        headers: {
          ...(body === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) }),
          ...options.headers,
        },
      },
      (res) => collectAnswer(res, resolve, reject),
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Reads a whole answer into an HttpsResult. */
function collectAnswer(res: http.IncomingMessage, resolve: (result: HttpsResult) => void, reject: (error: Error) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
  });
  res.on('error', reject);
}

/** One plain-HTTP GET to the ops port (/healthz, /readyz, /metrics) on a fresh connection. */
export function opsRequest(opsPort: number, requestPath: string, timeoutMs = 10_000): Promise<HttpsResult> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: opsPort, path: requestPath, agent: false, timeout: timeoutMs }, (res) => collectAnswer(res, resolve, reject));
    req.on('timeout', () => req.destroy(new Error(`GET ${requestPath} on the ops port: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** POSTs an AdmissionReview (object or raw text) to /mutate. */
export function postAdmission(port: number, review: unknown, options: RequestOptions): Promise<HttpsResult> {
  const body = typeof review === 'string' || Buffer.isBuffer(review) ? review : JSON.stringify(review);
  return httpsRequest(port, '/mutate', body, options);
}

/** A keep-alive agent like the apiserver's, trusting only `ca`. */
export function keepAliveAgent(ca: string, servername = TEST_SERVER_NAME, maxSockets = 10): https.Agent {
  return new https.Agent({ keepAlive: true, maxSockets, ca, servername });
}

/** A TCP port free on 127.0.0.1 right now, for a process that must be told its port up front. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address() as net.AddressInfo;
      server.close(() => resolve(address.port));
    });
  });
}

/**
 * The value the kubelet gives an env var of `container` that comes from the downward API's
 * `resourceFieldRef` (limits.memory, requests.memory, limits.cpu, requests.cpu), or undefined for
 * any other env var. A memory limit comes as whole bytes divided by the divisor, rounded up.
 */
export function downwardResourceValue(container: Record<string, any>, variable: Record<string, any>): string | undefined {
  const ref = variable.valueFrom?.resourceFieldRef;
  if (!ref) return undefined;
  if (ref.containerName !== undefined && ref.containerName !== container.name) {
    throw new Error(`env ${variable.name}: resourceFieldRef names container "${ref.containerName}", not "${container.name}"`);
  }
  const [section, resource] = String(ref.resource).split('.') as ['limits' | 'requests', string];
  const quantity = container.resources?.[section]?.[resource];
  if (quantity === undefined) throw new Error(`env ${variable.name}: the container sets no ${ref.resource} (the kubelet would give the node's allocatable)`);
  if (resource !== 'memory') throw new Error(`env ${variable.name}: only memory is resolved here, got ${ref.resource}`);
  const bytes = memoryQuantityBytes(String(quantity));
  const divisor = memoryQuantityBytes(String(ref.divisor ?? '1'));
  if (bytes === undefined || !divisor) throw new Error(`env ${variable.name}: cannot read ${ref.resource} "${quantity}"`);
  return String(Math.ceil(bytes / divisor));
}

/**
 * The synthesized Deployment materialized as `npm run webhook` does (mounts under `root`), with the
 * downward-API env vars resolved as the kubelet resolves them: the environment the container gets.
 */
export function deployedEnvironment(manifests: Record<string, any>[], root: string): DeployedWebhook & { container: Record<string, any> } {
  const deployed = materializeDeployment(manifests, root);
  const deployment = manifests.find((manifest) => manifest.kind === 'Deployment');
  if (!deployment) throw new Error('no Deployment in the manifests');
  const container = deployment.spec.template.spec.containers[0];
  const env = { ...deployed.env };
  for (const variable of container.env ?? []) {
    const value = downwardResourceValue(container, variable);
    if (value !== undefined) env[variable.name] = value;
  }
  return { ...deployed, env, container };
}

/** `promise`, or a failure naming `what` once `ms` have passed without it. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
    }),
  ]);
}

/** Probes every 50 ms until it returns a value; fails naming `what` after `timeoutMs`. */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
