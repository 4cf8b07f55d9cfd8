// The default app installed on a throwaway control plane the way a cluster runs it, for
// `npm run bench:cluster`: every synthesized object created as it is (the MutatingWebhookConfiguration's
// clientConfig pointed at 127.0.0.1, no Service endpoints here), and the webhook's two replicas and the
// reconciler run as the synthesized Deployments run them: their command (`node -e <loader>`, the bundle
// from the output's ConfigMap), their env, their ConfigMaps and Secret written as the kubelet mounts them,
// and their ServiceAccount's token at the in-cluster path (a mount namespace of their own, so nothing
// on the host changes), authorized by the RBAC they were synthesized with.
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { Yaml } from 'cdk8s';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { synthDefaultApp } from '../../app/default-app';
import type { Injection } from '../../charts/engine';
import type { AdmissionPolicyApiVersion, InjectorBackend } from '../../charts/admission-policy';
import { RUNTIME_ENV, TLS_FILES } from '../../webhook/config';
import { writeAtomicDirectory } from '../../webhook/dev/deployed-mounts';
import { downwardResourceValue, freePort } from '../support/webhook-harness';
import { type ControlPlane, stopProcesses } from '../e2e/support/control-plane';
import { forEachLine } from './bench-support';

export type Manifest = Record<string, any>;
export const INJECTOR_NAMESPACE = 'sidecar-injector';
/** The label the synthesized webhook configuration and policy bindings select namespaces by. */
export const INJECTION_LABEL = { injection: 'enabled' } as const;
/** Envoy's overrides: one read from the namespace (so the webhook lists and watches namespaces). */
export const ENVOY_OVERRIDES = [
  { annotation: 'envoy.example.com/cpu-request', container: 'envoy', resource: 'requests.cpu', max: '1' },
  { annotation: 'envoy.example.com/memory-request', container: 'envoy', resource: 'requests.memory', max: '256Mi', fromNamespace: true },
] as const;
export const NAMESPACE_OVERRIDE = { 'envoy.example.com/memory-request': '96Mi' } as const;
/** The reconciler: the default actions, a pass every 5 s (the shortest allowed) so the bench waits little. */
const RECONCILER = { intervalSeconds: 5 } as const;

/** What a variant of the app changes: Envoy's image, injections added. */
export interface InjectorVariant {
  readonly envoyImage?: string;
  readonly extraInjections?: readonly Injection[];
}

/** The default app with Envoy's overrides and the reconciler on, synthesized for `backend`. */
export function synthInjector(backend: InjectorBackend, apiVersion: AdmissionPolicyApiVersion, outdir: string, certificateStore: string, variant: InjectorVariant = {}): Manifest[] {
  const injections = DEFAULT_INJECTIONS.map((injection) =>
    injection.name !== 'envoy'
      ? injection
      : {
          ...injection,
          overrides: ENVOY_OVERRIDES.map((override) => ({ ...override })),
          containers: injection.containers!.map((container) => ({ ...container, ...(variant.envoyImage ? { image: variant.envoyImage } : {}) })),
        },
  );
  const files = synthDefaultApp({ outdir, certificateStore, injections: [...injections, ...(variant.extraInjections ?? [])], backend, admissionPolicyApiVersion: apiVersion, reconciler: RECONCILER });
  return files.sort().flatMap((file) => Yaml.load(file) as Manifest[]);
}

// ---------------------------------------------------------------------------------------------
// Objects

const discovered = new Map<string, { plural: string; namespaced: boolean }>();

/** The collection an object is created in, from the apiserver's discovery documents. */
async function collectionPath(plane: ControlPlane, object: Manifest): Promise<string> {
  const apiVersion: string = object.apiVersion;
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const key = `${plane.apiserverPort}/${apiVersion}/${object.kind}`;
  if (!discovered.has(key)) {
    for (const resource of (await plane.ok('GET', base)).resources) {
      if (!resource.name.includes('/')) discovered.set(`${plane.apiserverPort}/${apiVersion}/${resource.kind}`, { plural: resource.name, namespaced: resource.namespaced });
    }
  }
  const resource = discovered.get(key);
  if (!resource) throw new Error(`the apiserver serves no ${apiVersion} ${object.kind}`);
  return resource.namespaced ? `${base}/namespaces/${object.metadata.namespace ?? 'default'}/${resource.plural}` : `${base}/${resource.plural}`;
}

/** The path of an object that exists. */
export async function objectPath(plane: ControlPlane, object: Manifest): Promise<string> {
  return `${await collectionPath(plane, object)}/${object.metadata.name}`;
}

/** Creates each object as it is, with strict field validation; throws naming the first the apiserver refuses. */
export async function createAll(plane: ControlPlane, objects: readonly Manifest[]): Promise<void> {
  for (const object of objects) await plane.ok('POST', `${await collectionPath(plane, object)}?fieldValidation=Strict`, object);
}

/** The synthesized webhook configuration calling 127.0.0.1:`port` (the replicas' proxy), trusting the plane's CA; all else as synthesized. */
export function servedLocally(configuration: Manifest, port: number, caCertificate: string): Manifest {
  return {
    ...configuration,
    webhooks: configuration.webhooks.map((entry: Manifest) => ({ ...entry, clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: Buffer.from(caCertificate).toString('base64') } })),
  };
}

/** An EndpointSlice saying the webhook's Service has a ready endpoint, as the EndpointSlice controller would with the replicas running. */
export function readyEndpoints(serviceName: string): Manifest {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${serviceName}-bench`, namespace: INJECTOR_NAMESPACE, labels: { 'kubernetes.io/service-name': serviceName } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.0.0.10'], conditions: { ready: true } }, { addresses: ['10.0.0.11'], conditions: { ready: true } }],
    ports: [{ name: 'https', port: 8443, protocol: 'TCP' }],
  };
}

/** A token of ServiceAccount `name` in the injector's namespace, written with the CA as the kubelet projects them. */
export async function serviceAccountDir(plane: ControlPlane, name: string, dir: string): Promise<string> {
  const request = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 4 * 3600 } };
  const answer = await plane.ok('POST', `/api/v1/namespaces/${INJECTOR_NAMESPACE}/serviceaccounts/${name}/token`, request);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'token'), answer.status.token, { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'ca.crt'), plane.pki.caCertificate, { mode: 0o600 });
  return dir;
}

// ---------------------------------------------------------------------------------------------
// Containers

export interface MaterializedContainer {
  /** The container's environment, mount paths rewritten to the local directories. */
  readonly env: Record<string, string>;
  /** Local directory of each mount path. */
  readonly mounts: Record<string, string>;
  readonly command: readonly string[];
  readonly serviceAccountName?: string;
}

/**
 * The first container of Deployment `name`, as the kubelet would start it under `root`: its ConfigMaps
 * and Secrets written there with the `..data` layout, its env with the downward API resolved (`pod`
 * gives metadata.name and metadata.namespace).
 */
export function materializeContainer(manifests: readonly Manifest[], name: string, root: string, pod: { name: string; namespace: string }): MaterializedContainer {
  const deployment = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === name);
  if (!deployment) throw new Error(`no Deployment ${name} in the synthesized output`);
  const spec = deployment.spec.template.spec;
  const container = spec.containers[0];
  const source = (kind: string, objectName: string) => {
    const found = manifests.find((m) => m.kind === kind && m.metadata.name === objectName);
    if (!found) throw new Error(`Deployment ${name} mounts ${kind} ${objectName}, which is not in the output`);
    return found;
  };
  const mounts: Record<string, string> = {};
  for (const mount of container.volumeMounts ?? []) {
    const volume = spec.volumes.find((v: Manifest) => v.name === mount.name);
    const local = path.join(root, mount.mountPath);
    const decoded = (data: Record<string, string> | undefined) => Object.fromEntries(Object.entries(data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]));
    if (volume?.secret) writeAtomicDirectory(local, decoded(source('Secret', volume.secret.secretName).data));
    else if (volume?.configMap) {
      const configMap = source('ConfigMap', volume.configMap.name);
      writeAtomicDirectory(local, { ...configMap.data, ...decoded(configMap.binaryData) });
    } else throw new Error(`Deployment ${name}: volume ${mount.name} is neither a Secret nor a ConfigMap`);
    mounts[mount.mountPath] = local;
  }
  const fields: Record<string, string> = { 'metadata.name': pod.name, 'metadata.namespace': pod.namespace };
  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    const fieldPath = variable.valueFrom?.fieldRef?.fieldPath;
    if (fieldPath !== undefined && !(fieldPath in fields)) throw new Error(`Deployment ${name}: env ${variable.name} from ${fieldPath} is not resolved here`);
    const value = fieldPath !== undefined ? fields[fieldPath] : (downwardResourceValue(container, variable) ?? String(variable.value ?? ''));
    env[variable.name] = mounts[value] ?? value;
  }
  return { env, mounts, command: container.command ?? [], serviceAccountName: spec.serviceAccountName };
}

// ---------------------------------------------------------------------------------------------
// Processes

/** The in-cluster token path, with a tmpfs over /run in the process's own mount namespace only. */
const IN_CLUSTER_SCRIPT = [
  'set -e',
  'mount -t tmpfs -o size=1m,mode=0755 tmpfs /run',
  'mkdir -p /run/secrets/kubernetes.io/serviceaccount',
  'cp "$BENCH_SERVICE_ACCOUNT_DIR/token" "$BENCH_SERVICE_ACCOUNT_DIR/ca.crt" /run/secrets/kubernetes.io/serviceaccount/',
  'unset BENCH_SERVICE_ACCOUNT_DIR',
  'exec "$@"',
].join('\n');

export interface PodProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** The node process's pid (unshare and sh exec into it). */
  readonly pid: number;
  /** The port it serves on (the webhook's), 0 for none. */
  readonly port: number;
  readonly opsPort: number;
  readonly logFile: string;
  stop(): Promise<void>;
}

export interface PodProcessOptions {
  readonly name: string;
  /** The node binary standing in for the image's `node`. */
  readonly node: string;
  readonly container: MaterializedContainer;
  /** Variables set over the container's (ports, the TLS directory). */
  readonly env: Record<string, string>;
  readonly port?: number;
  readonly opsPort: number;
  readonly plane: ControlPlane;
  /** The ServiceAccount's token and CA (serviceAccountDir); without it, no in-cluster credentials. */
  readonly serviceAccountDir?: string;
  readonly logFile: string;
}

/** Starts a container's command as its own process; resolves once its ops port answers /readyz with 200. */
export async function startPodProcess(options: PodProcessOptions, timeoutMs = 120_000): Promise<PodProcess> {
  const [first, ...args] = options.container.command;
  if (first !== 'node') throw new Error(`${options.name}: the command starts with ${first}, not node`);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    ...options.container.env,
    KUBERNETES_SERVICE_HOST: options.plane.address,
    KUBERNETES_SERVICE_PORT: String(options.plane.apiserverPort),
    ...options.env,
  };
  const log = fs.openSync(options.logFile, 'a');
  let child: ChildProcess;
  try {
    child = options.serviceAccountDir
      ? spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', IN_CLUSTER_SCRIPT, 'sh', options.node, ...args], { env: { ...env, BENCH_SERVICE_ACCOUNT_DIR: options.serviceAccountDir }, stdio: ['ignore', log, log] })
      : spawn(options.node, args, { env, stdio: ['ignore', log, log] });
  } finally {
    fs.closeSync(log);
  }
  // SIGTERM first, as the kubelet stops a pod (a `--cpu-prof` in CLUSTER_RECONCILER_NODE_ARGS is written
  // on that exit), SIGKILL after its grace.
  const stop = () => stopProcesses([{ name: options.name, child, logFile: options.logFile }]);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${options.name} exited with ${child.exitCode ?? child.signalCode}:\n${tail(options.logFile)}`);
    if ((await opsStatus(options.opsPort, '/readyz')) === 200 && fs.readFileSync(`/proc/${child.pid}/comm`, 'utf8').trim() === 'node') break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${options.name} not ready within ${timeoutMs} ms:\n${tail(options.logFile)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { name: options.name, child, pid: child.pid!, port: options.port ?? 0, opsPort: options.opsPort, logFile: options.logFile, stop };
}

/** The last lines of a log file, for an error. */
export function tail(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** GET on a plain-HTTP ops port: its status, 0 when nothing answers. */
export function opsGet(port: number, requestPath: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: requestPath, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, text: '' }));
  });
}

const opsStatus = async (port: number, requestPath: string) => (await opsGet(port, requestPath)).status;

const WEBHOOK_NODE_ARGS = process.env.CLUSTER_WEBHOOK_NODE_ARGS?.split(' ').filter(Boolean) ?? [];

/** The webhook's replicas, started from `manifests` with the plane's serving certificate (127.0.0.1). */
export async function startWebhookReplicas(plane: ControlPlane, manifests: readonly Manifest[], root: string, node: string, replicas: number): Promise<PodProcess[]> {
  const tlsDir = path.join(root, 'tls-127.0.0.1');
  writeAtomicDirectory(tlsDir, { [TLS_FILES.certificate]: plane.pki.serving.certificate, [TLS_FILES.privateKey]: plane.pki.serving.privateKey, [TLS_FILES.caCertificate]: plane.pki.caCertificate });
  const started: PodProcess[] = [];
  try {
    for (let replica = 0; replica < replicas; replica++) {
      const pod = { name: `sidecar-injector-bench-${replica}`, namespace: INJECTOR_NAMESPACE };
      const materialized = materializeContainer(manifests, 'sidecar-injector', path.join(root, pod.name), pod);
      // CLUSTER_WEBHOOK_NODE_ARGS: node options put before the synthesized command's own, to look into
      // the replicas under load (`--cpu-prof --cpu-prof-dir=...`, written at the SIGTERM that stops them).
      const [nodeCommand, ...commandArgs] = materialized.command;
      const container = WEBHOOK_NODE_ARGS.length > 0 ? { ...materialized, command: [nodeCommand, ...WEBHOOK_NODE_ARGS, ...commandArgs] } : materialized;
      const tokens = container.serviceAccountName ? await serviceAccountDir(plane, container.serviceAccountName, path.join(root, pod.name, 'serviceaccount')) : undefined;
      const [port, opsPort] = [await freePort(), await freePort()];
      started.push(
        await startPodProcess({
          name: pod.name,
          node,
          container,
          env: { [RUNTIME_ENV.tlsDir]: tlsDir, [RUNTIME_ENV.listenPort]: String(port), [RUNTIME_ENV.opsPort]: String(opsPort) },
          port,
          opsPort,
          plane,
          serviceAccountDir: tokens,
          logFile: path.join(root, `${pod.name}.log`),
        }),
      );
    }
  } catch (error) {
    for (const process of started) await process.stop();
    throw error;
  }
  return started;
}

/**
 * The Go baseline webhook's replicas (test/bench/go-baseline/, built by cluster-bench.ts), each a process
 * on the host as ours are, serving the plane's certificate for 127.0.0.1; resolves once each one's ops
 * port answers /readyz. No token, no mounts: it reads nothing but its certificate.
 */
export async function startGoBaselineReplicas(binary: string, root: string, plane: ControlPlane, replicas: number, timeoutMs = 60_000): Promise<PodProcess[]> {
  const tlsDir = path.join(root, 'tls-127.0.0.1');
  writeAtomicDirectory(tlsDir, { [TLS_FILES.certificate]: plane.pki.serving.certificate, [TLS_FILES.privateKey]: plane.pki.serving.privateKey });
  const started: PodProcess[] = [];
  try {
    for (let replica = 0; replica < replicas; replica++) {
      const name = `go-baseline-${replica}`;
      const [port, opsPort] = [await freePort(), await freePort()];
      const logFile = path.join(root, `${name}.log`);
      const log = fs.openSync(logFile, 'a');
      let child: ChildProcess;
      try {
        child = spawn(binary, [], { env: { PATH: process.env.PATH ?? '', GO_BASELINE_TLS_DIR: tlsDir, GO_BASELINE_PORT: String(port), GO_BASELINE_OPS_PORT: String(opsPort) }, stdio: ['ignore', log, log] });
      } finally {
        fs.closeSync(log);
      }
      const stop = () => stopProcesses([{ name, child, logFile }]);
      started.push({ name, child, pid: child.pid!, port, opsPort, logFile, stop });
      const deadline = Date.now() + timeoutMs;
      while ((await opsStatus(opsPort, '/readyz')) !== 200) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited with ${child.exitCode ?? child.signalCode}:\n${tail(logFile)}`);
        if (Date.now() > deadline) throw new Error(`${name} not ready within ${timeoutMs} ms:\n${tail(logFile)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } catch (error) {
    for (const process of started) await process.stop();
    throw error;
  }
  return started;
}

/**
 * What a Service does for the apiserver's calls: each new TCP connection to one port goes to the next
 * replica (kube-proxy picks one per connection too). Bytes are passed through (and those coming back
 * counted); TLS ends in the upstream. With one port, it counts what a client reads from the apiserver.
 */
export interface TcpProxy {
  readonly port: number;
  /** Connections each upstream port was given. */
  readonly connections: number[];
  /** Bytes the upstreams sent back, TLS records and all. */
  readonly bytesFromUpstream: () => number;
  close(): Promise<void>;
}

export async function roundRobinProxy(ports: readonly number[]): Promise<TcpProxy> {
  const connections = ports.map(() => 0);
  let received = 0;
  let next = 0;
  const sockets = new Set<net.Socket>();
  // No Nagle on either leg, as in the proxy process below.
  const server = net.createServer({ noDelay: true }, (client) => {
    const index = next++ % ports.length;
    connections[index]++;
    const upstream = net.connect({ port: ports[index], host: '127.0.0.1', noDelay: true });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.on('data', (chunk: Buffer) => (received += chunk.length));
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections,
    bytesFromUpstream: () => received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * The same round-robin proxy as a process of its own (plain JavaScript run by `node -e`), so the pods'
 * load generator in this process cannot delay the bytes of the apiserver's calls. It prints its port,
 * and on each line read from stdin, the connections each upstream has been given.
 */
const PROXY_PROGRAM = `
const net = require('net');
const ports = process.argv.slice(1).map(Number);
const connections = ports.map(() => 0);
let next = 0;
// No Nagle on either leg (kube-proxy's DNAT holds no byte back): with it, a small write behind one not
// yet acknowledged waited out the peer's delayed ACK, some 40 ms, on every HTTP/2 call (HEADERS and
// DATA written apart), which the apiserver measured as the webhook's latency.
const server = net.createServer({ noDelay: true }, (client) => {
  const index = next++ % ports.length;
  connections[index]++;
  const upstream = net.connect({ port: ports[index], host: '127.0.0.1', noDelay: true });
  const close = () => { client.destroy(); upstream.destroy(); };
  client.on('error', close);
  upstream.on('error', close);
  client.pipe(upstream);
  upstream.pipe(client);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
process.stdin.on('data', () => process.stdout.write(JSON.stringify({ connections }) + '\\n'));
process.stdin.on('end', () => process.exit(0));
`;

export interface ProxyProcess {
  readonly port: number;
  readonly pid: number;
  /** Connections each upstream has been given so far. */
  connections(): Promise<number[]>;
  close(): Promise<void>;
}

export async function startProxyProcess(ports: readonly number[]): Promise<ProxyProcess> {
  // Ahead of everything else on the machine (kube-proxy's rules run in the kernel): a stall here would be
  // charged to the webhook, which cuts a body that stops arriving for 2 s.
  const child = spawn('nice', ['-n', '-10', process.execPath, '-e', PROXY_PROGRAM, ...ports.map(String)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: ((line: any) => void)[] = [];
  forEachLine(child.stdout!, (line) => lines.shift()?.(JSON.parse(line)));
  const nextLine = () => new Promise<any>((resolve) => lines.push(resolve));
  const { port } = await nextLine();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    port,
    pid: child.pid!,
    async connections() {
      const answer = nextLine();
      child.stdin!.write('?\n');
      return (await answer).connections;
    },
    async close() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
