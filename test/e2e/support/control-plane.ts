// An envtest-style control plane: etcd and kube-apiserver started from local binaries, listening on
// 127.0.0.1 only, with a throwaway PKI and data directory, and a small REST client (client
// certificate, no kubectl). Binaries come from KUBEBUILDER_ASSETS (etcd, kube-apiserver), or from the
// ETCD and KUBE_APISERVER paths, which win; with none of them set, from `npm run kube:build`'s cache
// (KUBE_VERSION picks the release) and Debian's /usr/bin/etcd.
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AdmissionPolicyApiVersion } from '../../../charts/admission-policy';
import { BUILD_HINT, isExecutable, useCachedKubernetes } from '../../support/kubernetes-binaries/releases';
import { createTestPki, KeyAndCertificate, TestPki } from './pki';

export interface ControlPlaneBinaries {
  readonly etcd: string;
  readonly kubeApiserver: string;
  /** Started beside the apiserver when set, so Deployments make ReplicaSets and pods. */
  readonly kubeControllerManager?: string;
}

/** The binaries with kube-controller-manager (KUBE_CONTROLLER_MANAGER, or KUBEBUILDER_ASSETS), or why not. */
export function findBinariesWithControllers(env: NodeJS.ProcessEnv = useCachedKubernetes()): Required<ControlPlaneBinaries> | string {
  const found = locateBinaries(env);
  const assets = env.KUBEBUILDER_ASSETS;
  const manager = env.KUBE_CONTROLLER_MANAGER ?? (assets ? path.join(assets, 'kube-controller-manager') : undefined);
  const missing = manager && isExecutable(manager) ? [] : [`no kube-controller-manager (${manager ?? 'unset'}); set KUBE_CONTROLLER_MANAGER to its path (built from the same source as the kube-apiserver)`];
  if (typeof found === 'string' || missing.length) return skipLine([...(typeof found === 'string' ? [found] : []), ...missing]);
  return { ...found, kubeControllerManager: manager! };
}

/** The binaries, or a one-line reason naming the variables when they are missing. */
export function findBinaries(env: NodeJS.ProcessEnv = useCachedKubernetes()): ControlPlaneBinaries | string {
  const found = locateBinaries(env);
  return typeof found === 'string' ? skipLine([found]) : found;
}

/** etcd and kube-apiserver, or what is missing and where to set it. */
function locateBinaries(env: NodeJS.ProcessEnv): ControlPlaneBinaries | string {
  const assets = env.KUBEBUILDER_ASSETS;
  const etcd = env.ETCD ?? (assets ? path.join(assets, 'etcd') : isExecutable(DEBIAN_ETCD) ? DEBIAN_ETCD : undefined);
  const kubeApiserver = env.KUBE_APISERVER ?? (assets ? path.join(assets, 'kube-apiserver') : undefined);
  const missing: string[] = [];
  if (!etcd || !isExecutable(etcd)) missing.push(`etcd (${etcd ?? 'unset'})`);
  if (!kubeApiserver || !isExecutable(kubeApiserver)) missing.push(`kube-apiserver (${kubeApiserver ?? 'unset'})`);
  if (missing.length === 0) return { etcd: etcd!, kubeApiserver: kubeApiserver! };
  return `no ${missing.join(' or ')}; set KUBEBUILDER_ASSETS to a directory holding etcd and kube-apiserver, or ETCD and KUBE_APISERVER to their paths`;
}

/** The suites' one skip line: what is missing, then how to build it. */
function skipLine(missing: readonly string[]): string {
  return `skipped: ${missing.join('; ')}, ${BUILD_HINT}`;
}

/** Debian's etcd-server package, the suites' etcd when none is named. */
export const DEBIAN_ETCD = '/usr/bin/etcd';

/** The admissionregistration version a release serves MutatingAdmissionPolicy in, from its --version line. */
export function policyApiVersionFor(version: string): AdmissionPolicyApiVersion {
  const match = /v1\.(\d+)/.exec(version);
  const minor = match ? Number(match[1]) : 0;
  if (minor < 32) throw new Error(`${version} has no MutatingAdmissionPolicy (alpha since 1.32)`);
  return minor >= 36 ? 'v1' : minor >= 34 ? 'v1beta1' : 'v1alpha1';
}

/**
 * The kube-apiserver flags that serve MutatingAdmissionPolicy in `apiVersion` (the feature gate, the runtime
 * config), with `moreGates` (`PodLevelResources=true`) in the same --feature-gates flag.
 */
export function policyApiserverFlags(apiVersion: string, moreGates: readonly string[] = []): string[] {
  return [`--feature-gates=${['MutatingAdmissionPolicy=true', ...moreGates].join(',')}`, `--runtime-config=admissionregistration.k8s.io/${apiVersion}=true`];
}

export function binaryVersion(file: string): string {
  const result = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  return (result.stdout || result.stderr).trim().split('\n')[0];
}

/** A kubeconfig with the admin client certificate, for kube-controller-manager and the CLI. */
export function adminKubeconfig(pki: TestPki, address: string, port: number, user: { name: string; identity: KeyAndCertificate } = { name: 'e2e-admin', identity: pki.admin }): string {
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: e2e',
    '  cluster:',
    `    server: https://${address}:${port}`,
    `    certificate-authority-data: ${base64(pki.caCertificate)}`,
    'users:',
    `- name: ${user.name}`,
    '  user:',
    `    client-certificate-data: ${base64(user.identity.certificate)}`,
    `    client-key-data: ${base64(user.identity.privateKey)}`,
    'contexts:',
    '- name: e2e',
    `  context: {cluster: e2e, user: ${user.name}}`,
    'current-context: e2e',
    '',
  ].join('\n');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface KubeResponse {
  readonly status: number;
  readonly body: any;
  readonly milliseconds: number;
}

export interface ControlPlaneOptions {
  /** Extra kube-apiserver flags, e.g. --feature-gates and --runtime-config. */
  readonly apiserverFlags: readonly string[];
  /** Extra kube-controller-manager flags, after the defaults (a repeated --controllers adds to the list). */
  readonly controllerManagerFlags?: readonly string[];
  readonly startTimeoutMs?: number;
  /**
   * Where it runs: by default every process on 127.0.0.1 with free ports. A node suite runs it in a
   * network namespace of its own instead: the processes are started through `enter` (nsenter), the
   * apiserver listens on `address`:6443 (reached from outside through the namespace's veth), and the
   * PKI serves that address too.
   */
  readonly network?: ControlPlaneNetwork;
  /** The PKI; one for 127.0.0.1 is made when left out. */
  readonly pki?: TestPki;
  /** The directory for data, certificates and logs. @default a new temporary directory, removed at stop */
  readonly dir?: string;
}

export interface ControlPlaneNetwork {
  /** The address clients reach the apiserver at (the node's InternalIP). */
  readonly address: string;
  /** The command line that runs `file args` inside the namespace. */
  readonly enter: (file: string, args: readonly string[]) => readonly [string, readonly string[]];
}

/** A process the suite started, writing its output to its own log file. */
export interface ManagedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logFile: string;
}

/**
 * Starts a process with its stdout and stderr going straight into `logFile`, never through a pipe to
 * this process: a test that blocks its event loop (a spawnSync of kubectl that waits for a namespace
 * to go) would stop draining a pipe, and a controller blocked on a full pipe stops working.
 */
export function startProcess(name: string, file: string, args: readonly string[], options: { enter?: ControlPlaneNetwork['enter']; logFile: string; env?: NodeJS.ProcessEnv }): ManagedProcess {
  const [command, commandArgs] = options.enter ? options.enter(file, args) : [file, args];
  const log = fs.openSync(options.logFile, 'a');
  try {
    const child = spawn(command, [...commandArgs], { stdio: ['ignore', log, log], env: options.env ?? { PATH: process.env.PATH ?? '' } });
    return { name, child, logFile: options.logFile };
  } finally {
    fs.closeSync(log);
  }
}

/** The last `lines` lines of each process's log, for a failure message. */
export function lastLogLines(processes: readonly ManagedProcess[], lines = 40): string {
  return processes
    .map(({ name, logFile }) => {
      let text = '';
      try {
        const size = fs.statSync(logFile).size;
        const fd = fs.openSync(logFile, 'r');
        const length = Math.min(size, 64 * 1024);
        const buffer = Buffer.alloc(length);
        fs.readSync(fd, buffer, 0, length, size - length);
        fs.closeSync(fd);
        text = buffer.toString('utf8');
      } catch {
        text = '(no log)';
      }
      return `--- ${name}\n${text.split('\n').slice(-lines).join('\n')}`;
    })
    .join('\n');
}

/** Stops processes in reverse order of start: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopProcesses(processes: readonly ManagedProcess[], graceMs = 10_000): Promise<void> {
  for (const { child } of [...processes].reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

export class ControlPlane {
  private constructor(
    readonly pki: TestPki,
    readonly apiserverPort: number,
    /** Data, certificates and logs. */
    readonly dir: string,
    private readonly processes: ManagedProcess[],
    private readonly agent: https.Agent,
    /** A kubeconfig file for the admin client (what kubectl and client-node read). */
    readonly kubeconfig: string,
    /** The address the apiserver is reached at. */
    readonly address: string,
    private readonly removeDir: boolean,
  ) {}

  static async start(binaries: ControlPlaneBinaries, options: ControlPlaneOptions): Promise<ControlPlane> {
    const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'e2e-control-plane-'));
    const pki = options.pki ?? createTestPki();
    const network = options.network;
    const address = network?.address ?? '127.0.0.1';
    const write = (name: string, text: string) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, text, { mode: 0o600 });
      return file;
    };
    const files = {
      ca: write('ca.crt', pki.caCertificate),
      servingCert: write('serving.crt', pki.serving.certificate),
      servingKey: write('serving.key', pki.serving.privateKey),
      serviceAccountKey: write('sa.key', pki.serviceAccountKey),
    };
    // In a namespace of its own, every port is free.
    const [etcdClient, etcdPeer, apiserverPort] = network ? [2379, 2380, 6443] : [await freePort(), await freePort(), await freePort()];
    const processes: ManagedProcess[] = [];
    const run = (name: string, file: string, args: string[]) => {
      processes.push(startProcess(name, file, args, { enter: network?.enter, logFile: path.join(dir, `${name}.log`) }));
    };
    run('etcd', binaries.etcd, [
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      '--name=default',
      '--log-level=warn',
    ]);
    run('kube-apiserver', binaries.kubeApiserver, [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      `--bind-address=${network ? '0.0.0.0' : '127.0.0.1'}`,
      `--advertise-address=${address}`,
      // The `kubernetes` Service's endpoints need an address pods can reach: from 1.37 the apiserver refuses
      // to start with a loopback one (ValidateIP). Off the node nothing reaches it from a pod, so none is kept.
      ...(network ? [] : ['--endpoint-reconciler-type=none']),
      `--secure-port=${apiserverPort}`,
      `--cert-dir=${path.join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${files.servingCert}`,
      `--tls-private-key-file=${files.servingKey}`,
      `--client-ca-file=${files.ca}`,
      `--service-account-issuer=https://${address}:${apiserverPort}`,
      `--service-account-key-file=${files.serviceAccountKey}`,
      `--service-account-signing-key-file=${files.serviceAccountKey}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      // On a node, as a cluster runs: the kubelet is authorized as a node, the controller-manager makes
      // the default ServiceAccounts. Without one, admit pods without it, as envtest does.
      ...(network
        ? ['--authorization-mode=Node,RBAC', '--enable-admission-plugins=NodeRestriction']
        : ['--authorization-mode=RBAC', '--disable-admission-plugins=ServiceAccount']),
      '--allow-privileged=true',
      '--v=1',
      ...options.apiserverFlags,
    ]);
    // A pooled connection left idle is closed by the client after 30 s, well before the apiserver's own
    // 90 s idle timeout, so the two never close one at the same moment as a request is sent on it.
    const agent = new https.Agent({ ca: pki.caCertificate, cert: pki.admin.certificate, key: pki.admin.privateKey, keepAlive: true, maxSockets: 4, timeout: 30_000 });
    const kubeconfig = write('admin.kubeconfig', adminKubeconfig(pki, address, apiserverPort));
    const plane = new ControlPlane(pki, apiserverPort, dir, processes, agent, kubeconfig, address, options.dir === undefined);
    try {
      await plane.waitReady(options.startTimeoutMs ?? 90_000);
      if (binaries.kubeControllerManager) {
        // The admin identity (system:masters) and no serving port: only the controllers are wanted.
        // No kubelet and no scheduler: the pods the controllers make stay Pending, admitted all the same.
        run('kube-controller-manager', binaries.kubeControllerManager, [
          `--kubeconfig=${kubeconfig}`,
          `--authentication-kubeconfig=${kubeconfig}`,
          `--authorization-kubeconfig=${kubeconfig}`,
          '--bind-address=127.0.0.1',
          '--secure-port=0',
          '--leader-elect=false',
          '--controllers=*',
          `--root-ca-file=${files.ca}`,
          `--service-account-private-key-file=${files.serviceAccountKey}`,
          '--v=1',
          ...(options.controllerManagerFlags ?? []),
        ]);
      }
    } catch (error) {
      await plane.stop();
      throw error;
    }
    return plane;
  }

  /** The last lines each process wrote, for a failure message. */
  /** `name exited with code` for a process of the control plane that is no longer running. */
  exited(): string | undefined {
    const gone = this.processes.find(({ child }) => child.exitCode !== null || child.signalCode !== null);
    return gone && `${gone.name} exited with ${gone.child.exitCode ?? gone.child.signalCode}`;
  }

  logs(): string {
    return lastLogLines(this.processes);
  }

  private async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      for (const { name, child } of this.processes) {
        if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${this.logs()}`);
      }
      try {
        const response = await this.request('GET', '/readyz');
        if (response.status === 200) return;
        last = `readyz ${response.status}: ${typeof response.body === 'string' ? response.body : JSON.stringify(response.body)}`;
      } catch (error) {
        last = (error as Error).message;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    throw new Error(`kube-apiserver not ready within ${timeoutMs} ms (${last}):\n${this.logs()}`);
  }

  /**
   * One REST call as the admin client; JSON in and out (a PATCH names its patch type in `contentType`).
   * `headers` adds to the request's, e.g. `Impersonate-User` to act as another identity.
   */
  request(method: string, requestPath: string, body?: unknown, contentType = 'application/json', headers: Record<string, string> = {}): Promise<KubeResponse> {
    return this.requestOnce(method, requestPath, body, contentType, headers).catch((error: NodeJS.ErrnoException & { reusedSocket?: boolean }) => {
      // A pooled connection the server closed as this request went out on it (Node's documented case
      // for a retry: `request.reusedSocket` with ECONNRESET): nothing reached the apiserver's handler,
      // so the request is sent again, once, on a fresh connection.
      if (error.reusedSocket && error.code === 'ECONNRESET') return this.requestOnce(method, requestPath, body, contentType, headers);
      throw error;
    });
  }

  private requestOnce(method: string, requestPath: string, body: unknown, contentType: string, headers: Record<string, string>): Promise<KubeResponse> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const started = process.hrtime.bigint();
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: this.address,
          port: this.apiserverPort,
          path: requestPath,
          method,
          agent: this.agent,
          headers: { accept: 'application/json', ...headers, ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}) },
          timeout: 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              // plain text (readyz)
            }
            resolve({ status: res.statusCode ?? 0, body: parsed, milliseconds: Number(process.hrtime.bigint() - started) / 1e6 });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${requestPath} timed out`)));
      req.on('error', (error) => reject(Object.assign(error, { reusedSocket: req.reusedSocket })));
      req.end(payload);
    });
  }

  /** A GET whose answer is bytes (a /debug/pprof profile), as the admin client. */
  bytes(requestPath: string, timeoutMs = 120_000): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const req = https.request({ host: this.address, port: this.apiserverPort, path: requestPath, method: 'GET', agent: this.agent, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`GET ${requestPath}: ${res.statusCode} ${Buffer.concat(chunks).toString('utf8')}`))));
      });
      req.on('timeout', () => req.destroy(new Error(`GET ${requestPath} timed out`)));
      req.on('error', reject);
      req.end();
    });
  }

  /** Like request, but throws with the apiserver's message unless the status is 2xx. */
  async ok(method: string, requestPath: string, body?: unknown, contentType?: string): Promise<any> {
    const response = await this.request(method, requestPath, body, contentType);
    if (response.status < 200 || response.status > 299) {
      throw new Error(`${method} ${requestPath}: ${response.status} ${typeof response.body === 'string' ? response.body : response.body?.message ?? JSON.stringify(response.body)}`);
    }
    return response.body;
  }

  async stop(): Promise<void> {
    this.agent.destroy();
    await stopProcesses(this.processes);
    if (this.removeDir) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
