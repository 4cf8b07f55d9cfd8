// What `npm run bench:cluster` measures beside admission: the webhook's memory as the namespaces it
// watches grow from 20 to 2,000; the reconciler's passes against the real apiserver holding the pods
// (its first full pass, a quiet one, one after a namespace changed, one after the injector changed);
// and `status -A` over those pods.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RECONCILER_ENV } from '../../webhook/config';
import { freePort } from '../support/webhook-harness';
import { counterSum, parseMetrics } from './apiserver-metrics';
import { BENCH_NAMESPACE_METADATA, type ClusterSettings, type InstalledInjector, benchNamespaces, createNamespaces, installInjector } from './cluster-admission';
import { INJECTOR_NAMESPACE, type InjectorVariant, type Manifest, NAMESPACE_OVERRIDE, materializeContainer, objectPath, opsGet, roundRobinProxy, serviceAccountDir, startPodProcess, synthInjector, tail } from './cluster-injector';
import { medianRssKb, processStats } from './machine-load';
import { REPO_ROOT } from './bench-support';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An injection offered by annotation that no pod of the bench carries. */
const UNASKED_INJECTION = {
  name: 'debug-shell',
  trigger: { type: 'annotation', key: 'example.com/debug-shell' },
  containers: [
    {
      name: 'debug-shell',
      image: 'busybox:1.36',
      command: ['sleep', 'infinity'],
      resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '32Mi' } },
      securityContext: { runAsNonRoot: true, runAsUser: 65534, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
    },
  ],
} as const;

/** Polls `probe` every 200 ms until it returns a value; throws naming `what` after `timeoutMs`. */
async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------
// The webhook's namespace watch

export interface NamespaceWatchResult {
  readonly small: number;
  readonly large: number;
  /** Per replica: median RSS (MiB) over 5 s, with `small` and then `large` namespaces watched, and the table's entries then. */
  readonly replicas: readonly { readonly smallMiB: number; readonly largeMiB: number; readonly peakMiB: number; readonly entries: number; readonly tableBytes: number }[];
}

async function tableSize(opsPort: number): Promise<{ entries: number; bytes: number; synced: number }> {
  const samples = parseMetrics((await opsGet(opsPort, '/metrics')).text);
  return {
    entries: counterSum(samples, 'sidecar_injector_namespace_defaults_entries'),
    bytes: counterSum(samples, 'sidecar_injector_namespace_defaults_bytes'),
    synced: counterSum(samples, 'sidecar_injector_namespace_defaults_synced'),
  };
}

/** A fresh plane with `small` namespaces, the webhook's replicas started, then namespaces created up to `large`. */
export async function namespaceWatch(settings: ClusterSettings, small: number, large: number): Promise<NamespaceWatchResult> {
  const names = (from: number, to: number) => Array.from({ length: to - from }, (_, index) => `watched-${String(from + index).padStart(4, '0')}`);
  let existing = 0;
  const injector = await installInjector(settings, 'webhook', 'namespaces', async (plane) => {
    existing = (await plane.ok('GET', '/api/v1/namespaces')).items.length;
    await createNamespaces(plane, names(existing, small), BENCH_NAMESPACE_METADATA);
  });
  try {
    const { replicas } = injector;
    const annotated = (total: number) => total - existing;
    const settled = async (total: number) => {
      for (const replica of replicas) await until(`replica ${replica.name} keeping ${annotated(total)} namespaces`, 120_000, async () => ((await tableSize(replica.opsPort)).entries >= annotated(total) ? true : undefined));
      await sleep(5000);
      return Promise.all(replicas.map((replica) => medianRssKb(replica.pid)));
    };
    settings.progress(`namespace watch: ${small} namespaces, ${replicas.length} replicas`);
    const smallKb = await settled(small);
    await createNamespaces(injector.plane, names(small, large), BENCH_NAMESPACE_METADATA);
    settings.progress(`namespace watch: ${large} namespaces`);
    const largeKb = await settled(large);
    const sizes = await Promise.all(replicas.map((replica) => tableSize(replica.opsPort)));
    return {
      small,
      large,
      replicas: replicas.map((replica, index) => ({ smallMiB: smallKb[index] / 1024, largeMiB: largeKb[index] / 1024, peakMiB: processStats(replica.pid).peakKb / 1024, entries: sizes[index].entries, tableBytes: sizes[index].bytes })),
    };
  } finally {
    await injector.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// The reconciler

export interface ReconcilerPass {
  readonly label: string;
  /** From its 'pass done' log line. */
  readonly listed: 'all' | number;
  readonly pods: number;
  readonly seconds: number;
  readonly cpuSeconds: number;
  /** Requests the apiserver counted from clients other than itself in the window (this pass and the wait before it). */
  readonly requests: number;
  readonly requestsByKind: Readonly<Record<string, number>>;
  /** Bytes the reconciler read from the apiserver (through a counting proxy: TLS records included), pass and wait before it. */
  readonly bytesRead: number;
  readonly peakMiB: number;
  readonly rssMiB: number;
  readonly line: Record<string, unknown>;
}

export interface ReconcilerResult {
  readonly passes: readonly ReconcilerPass[];
  readonly nodeOptions: string;
  /** The synthesized command's flags between `node` and its script (`--single-threaded-gc`). */
  readonly nodeFlags: string;
}

const passLines = (logFile: string) =>
  fs
    .readFileSync(logFile, 'utf8')
    .split('\n')
    .flatMap((line) => {
      try {
        const entry = JSON.parse(line);
        return entry.msg === 'pass done' ? [entry as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });

/**
 * Requests of clients other than the apiserver itself, by verb and resource; this bench's own scrapes and
 * triggers left out. Up to 1.36 the apiserver's own requests carry a `system_client` label; 1.37 dropped the
 * label, so there they are counted too (its informers' few LISTs and WATCHes, started before the passes).
 */
function requestCounts(metricsText: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const sample of parseMetrics(metricsText)) {
    const systemClient = sample.labels.system_client;
    if (sample.name !== 'apiserver_request_total' || (systemClient !== undefined && systemClient !== '')) continue;
    const { verb, resource, subresource, dry_run: dryRun } = sample.labels;
    // This bench: its /metrics scrapes, the namespace it annotates and the ConfigMap it replaces; the webhook replicas' namespace watch.
    if (subresource === '/metrics' || (verb === 'PATCH' && resource === 'namespaces') || (verb === 'PUT' && resource === 'configmaps') || (verb === 'WATCH' && resource === 'namespaces')) continue;
    const key = `${verb} ${resource}${subresource ? `/${subresource}` : ''}${dryRun ? ' (dry run)' : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + sample.value);
  }
  return counts;
}

/**
 * The reconciler started against `injector`'s plane, as synthesized (its ServiceAccount's token and RBAC),
 * through a proxy that counts the bytes it reads; six passes: the first (every pod), a quiet one, one after
 * one namespace's annotations changed, one after an injection was added that no pod asks for (every pod
 * judged again, all up to date), one after Envoy's image was bumped (every pod outdated), and the next.
 */
export async function reconcilerPasses(settings: ClusterSettings, injector: InstalledInjector): Promise<ReconcilerResult> {
  const { plane, manifests } = injector;
  // The webhook configuration as synthesized (its clientConfig a Service, which the reconciler reads to
  // find the webhook's endpoints): no pod is created through the webhook from here on.
  const configuration = manifests.find((m) => m.kind === 'MutatingWebhookConfiguration') as Manifest;
  const registered = await plane.ok('GET', await objectPath(plane, configuration));
  await plane.ok('PUT', await objectPath(plane, configuration), { ...configuration, metadata: { ...configuration.metadata, resourceVersion: registered.metadata.resourceVersion } });
  const root = path.join(settings.work, 'reconciler');
  const pod = { name: 'sidecar-injector-reconciler-bench-0', namespace: INJECTOR_NAMESPACE };
  const materialized = materializeContainer(manifests, 'sidecar-injector-reconciler', root, pod);
  // CLUSTER_RECONCILER_NODE_ARGS: node options put before the synthesized command's own, to look into a
  // pass (`--trace-gc`, which NODE_OPTIONS does not take; its log is then copied to CLUSTER_RECONCILER_LOG).
  const extraArgs = process.env.CLUSTER_RECONCILER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const [node, ...commandArgs] = materialized.command;
  const container = extraArgs.length > 0 ? { ...materialized, command: [node, ...extraArgs, ...commandArgs] } : materialized;
  const tokens = await serviceAccountDir(plane, container.serviceAccountName!, path.join(root, 'serviceaccount'));
  const proxy = await roundRobinProxy([plane.apiserverPort]);
  const opsPort = await freePort();
  const reconciler = await startPodProcess({
    name: pod.name,
    node: settings.deployedNode,
    container,
    env: { [RECONCILER_ENV.opsPort]: String(opsPort), KUBERNETES_SERVICE_PORT: String(proxy.port) },
    opsPort,
    plane,
    serviceAccountDir: tokens,
    logFile: path.join(root, 'reconciler.log'),
  });
  const passes: ReconcilerPass[] = [];
  try {
    let requestsBefore = requestCounts((await plane.request('GET', '/metrics')).body);
    let bytesBefore = 0;
    const nextPass = async (label: string): Promise<ReconcilerPass> => {
      const seen = passes.length;
      const line = await until(`reconciler pass ${seen + 1} (${label})`, 300_000, () => {
        if (reconciler.child.exitCode !== null) throw new Error(`the reconciler exited:\n${tail(reconciler.logFile)}`);
        return passLines(reconciler.logFile)[seen];
      });
      const stats = processStats(reconciler.pid);
      const bytes = proxy.bytesFromUpstream();
      const requests = requestCounts((await plane.request('GET', '/metrics')).body);
      const byKind: Record<string, number> = {};
      for (const [key, count] of requests) if (count - (requestsBefore.get(key) ?? 0) > 0) byKind[key] = count - (requestsBefore.get(key) ?? 0);
      const pass: ReconcilerPass = {
        label,
        listed: line.listed as 'all' | number,
        pods: Number(line.pods),
        seconds: Number(line.seconds),
        cpuSeconds: Number(line.cpuSeconds),
        requests: Object.values(byKind).reduce((a, b) => a + b, 0),
        requestsByKind: byKind,
        bytesRead: bytes - bytesBefore,
        peakMiB: stats.peakKb / 1024,
        rssMiB: stats.rssKb / 1024,
        line,
      };
      requestsBefore = requests;
      bytesBefore = bytes;
      passes.push(pass);
      settings.progress(`reconciler: ${label}: listed ${pass.listed}, ${pass.pods} pods, ${pass.seconds} s, ${pass.cpuSeconds} s CPU, peak ${pass.peakMiB.toFixed(1)} MiB`);
      return pass;
    };
    await nextPass('first pass (every pod)');
    await nextPass('quiet pass (nothing changed)');
    // One namespace's annotations changed (its Envoy memory default): its pods are judged again, no other.
    // bench-007 in a full run; the last one where CLUSTER_NAMESPACES leaves fewer.
    const changedNamespace = benchNamespaces(settings.namespaces)[Math.min(7, settings.namespaces - 1)];
    await plane.ok('PATCH', `/api/v1/namespaces/${changedNamespace}`, { metadata: { annotations: { [Object.keys(NAMESPACE_OVERRIDE)[0]]: '112Mi' } } }, 'application/merge-patch+json');
    await nextPass('after one namespace changed');
    const configMap = manifests.find((m) => m.kind === 'ConfigMap' && m.data?.['config.json']) as Manifest;
    const replaceConfig = async (label: string, variant: InjectorVariant) => {
      const changed = synthInjector('webhook', settings.policyApiVersion, path.join(root, `dist-${label}`), path.join(settings.work, 'certs'), variant).find((m) => m.kind === 'ConfigMap' && m.data?.['config.json']) as Manifest;
      const live = await plane.ok('GET', await objectPath(plane, configMap));
      await plane.ok('PUT', await objectPath(plane, configMap), { ...live, data: changed.data });
    };
    // A change that leaves every pod up to date (an injection no pod asks for): every pod judged again, nothing to say.
    await replaceConfig('added', { extraInjections: [UNASKED_INJECTION] });
    await nextPass('after the injector changed (an injection added that no pod asks for)');
    await replaceConfig('bumped', { extraInjections: [UNASKED_INJECTION], envoyImage: 'envoyproxy/envoy:v1.20.4' });
    await nextPass('after the injector changed (Envoy bumped: every pod outdated)');
    await nextPass('the next pass (every workload still outdated)');
    const script = commandArgs.findIndex((arg) => arg === '-e' || !arg.startsWith('-'));
    return { passes, nodeOptions: container.env.NODE_OPTIONS ?? '', nodeFlags: commandArgs.slice(0, script < 0 ? 0 : script).join(' ') };
  } finally {
    await reconciler.stop();
    if (process.env.CLUSTER_RECONCILER_LOG) fs.copyFileSync(reconciler.logFile, process.env.CLUSTER_RECONCILER_LOG);
    await proxy.close();
  }
}

// ---------------------------------------------------------------------------------------------
// status -A

export interface StatusRun {
  readonly seconds: number;
  readonly peakMiB: number;
  readonly cpuSeconds: number;
  readonly exitCode: number | null;
  /** Its first lines of output. */
  readonly head: string;
}

export const CLI_BUILT = path.join(REPO_ROOT, 'lib/webhook/cli/main.js');

/** `status -A --from <outdir>` as a user runs the installed CLI (lib/, built by `npm run build`), under /usr/bin/time. */
export function statusAll(injector: InstalledInjector): Promise<StatusRun> {
  if (!fs.existsSync(CLI_BUILT)) throw new Error(`${CLI_BUILT} is missing: npm run bench:cluster builds it (npm run build)`);
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', 'bench-time %e %M %U %S', process.execPath, CLI_BUILT, 'status', '-A', '--from', injector.outdir, '--kubeconfig', injector.plane.kubeconfig], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const timing = /bench-time (\S+) (\d+) (\S+) (\S+)/.exec(stderr);
      if (!timing) return reject(new Error(`no timing from /usr/bin/time:\n${stderr}`));
      resolve({
        seconds: Number(timing[1]),
        peakMiB: Number(timing[2]) / 1024,
        cpuSeconds: Number(timing[3]) + Number(timing[4]),
        // time exits with the command's code.
        exitCode: code,
        head: stdout.split('\n').slice(0, 6).join('\n'),
      });
    });
  });
}
