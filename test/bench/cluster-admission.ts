// One admission run of `npm run bench:cluster`: a fresh control plane, the injector installed on it as
// synthesized (cluster-injector.ts), the namespaces, then pods created at a fixed rate, and what the
// apiserver's own /metrics say admission added: the admission plugin's latency (the webhook's, or the
// policies'), the webhook's or the policies' own histograms, and the fail-open and rejection counts.
// A third backend, the Go baseline (test/bench/go-baseline/), is registered with our synthesized webhook
// configuration, rules and selectors as they are, so the apiserver calls it exactly as it calls ours.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AdmissionPolicyApiVersion, InjectorBackend } from '../../charts/admission-policy';
import { ControlPlane, type ControlPlaneBinaries } from '../e2e/support/control-plane';
import { type Histogram, type Sample, counterSum, histogram, histogramDelta, labelsAre, parseMetrics, quantile, shareAtMost } from './apiserver-metrics';
import {
  INJECTION_LABEL,
  INJECTOR_NAMESPACE,
  type Manifest,
  NAMESPACE_OVERRIDE,
  type PodProcess,
  type ProxyProcess,
  createAll,
  readyEndpoints,
  servedLocally,
  startGoBaselineReplicas,
  startProxyProcess,
  startWebhookReplicas,
  synthInjector,
} from './cluster-injector';
import { type MachineLoad, pidOf, processStats, watchMachine } from './machine-load';
import { type PodLoadResult, createPodsAtRate } from './pod-load';

/** What answers the pods' admission: ours (the webhook, or the policies), or the Go baseline webhook. */
export type ClusterBackend = InjectorBackend | 'goBaseline';
/** The backends the apiserver calls over HTTPS: its webhook plugin and histograms measure them. */
export const callsWebhook = (backend: ClusterBackend) => backend === 'webhook' || backend === 'goBaseline';

export interface ClusterSettings {
  readonly binaries: ControlPlaneBinaries;
  readonly apiserverFlags: readonly string[];
  readonly policyApiVersion: AdmissionPolicyApiVersion;
  /** The node binary standing in for the synthesized Deployments' image. */
  readonly deployedNode: string;
  readonly pods: number;
  readonly namespaces: number;
  readonly podsPerDeployment: number;
  readonly work: string;
  readonly progress: (line: string) => void;
  /** The Go baseline webhook's binary (built at the start), when Go is installed. */
  readonly goBaseline?: string;
}

/** A plane with the injector installed: the webhook's replicas and their proxy, or the policies. */
export interface InstalledInjector {
  readonly plane: ControlPlane;
  readonly backend: ClusterBackend;
  readonly manifests: Manifest[];
  /** The directory the output was synthesized to (what `status --from` reads). */
  readonly outdir: string;
  readonly replicas: PodProcess[];
  readonly proxy?: ProxyProcess;
  readonly apiserverPid: number;
  readonly etcdPid: number;
  stop(): Promise<void>;
}

/**
 * Starts a plane and installs the injector of `backend` on it, every object as synthesized, with
 * `replicaCount` webhook replicas. For the Go baseline, the webhook's output as it is, but the replicas
 * behind the configuration are the Go baseline's.
 */
export async function installInjector(settings: ClusterSettings, backend: ClusterBackend, label: string, beforeReplicas?: (plane: ControlPlane) => Promise<void>, replicaCount = 2): Promise<InstalledInjector> {
  const dir = path.join(settings.work, label);
  fs.mkdirSync(dir, { recursive: true });
  const outdir = path.join(dir, 'dist');
  const manifests = synthInjector(backend === 'goBaseline' ? 'webhook' : backend, settings.policyApiVersion, outdir, path.join(settings.work, 'certs'));
  fs.mkdirSync(path.join(dir, 'plane'));
  const plane = await ControlPlane.start(settings.binaries, { apiserverFlags: settings.apiserverFlags, dir: path.join(dir, 'plane') });
  const replicas: PodProcess[] = [];
  let proxy: ProxyProcess | undefined;
  const stop = async () => {
    for (const replica of replicas) await replica.stop();
    await proxy?.close();
    await plane.stop();
  };
  try {
    const configuration = manifests.find((m) => m.kind === 'MutatingWebhookConfiguration');
    await createAll(plane, manifests.filter((m) => m !== configuration));
    await beforeReplicas?.(plane);
    if (configuration) {
      const service = configuration.webhooks[0].clientConfig.service.name;
      await createAll(plane, [readyEndpoints(service)]);
      if (backend !== 'goBaseline') replicas.push(...(await startWebhookReplicas(plane, manifests, path.join(dir, 'pods'), settings.deployedNode, replicaCount)));
      else if (settings.goBaseline) replicas.push(...(await startGoBaselineReplicas(settings.goBaseline, path.join(dir, 'pods'), plane, replicaCount)));
      else throw new Error('the goBaseline backend needs the Go baseline built (settings.goBaseline)');
      proxy = await startProxyProcess(replicas.map((replica) => replica.port));
      await createAll(plane, [servedLocally(configuration, proxy.port, plane.pki.caCertificate)]);
    }
    const apiserverPid = pidOf('kube-apiserver', `--secure-port=${plane.apiserverPort}`);
    const etcdPid = pidOf('etcd', `--data-dir=${path.join(dir, 'plane', 'etcd')}`);
    if (!apiserverPid || !etcdPid) throw new Error('cannot find the pids of kube-apiserver and etcd');
    return { plane, backend, manifests, outdir, replicas, proxy, apiserverPid, etcdPid, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Creates namespaces, `concurrency` at a time. */
export async function createNamespaces(plane: ControlPlane, names: readonly string[], metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }, concurrency = 16): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const name = names[next++];
      await plane.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, ...metadata } });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** The namespaces pods are created in: selected by the injector, with Envoy's memory request as their default. */
export const benchNamespaces = (count: number) => Array.from({ length: count }, (_, index) => `bench-${String(index).padStart(3, '0')}`);
export const BENCH_NAMESPACE_METADATA = { labels: { ...INJECTION_LABEL }, annotations: { ...NAMESPACE_OVERRIDE } };

/** Waits until a dry-run pod in `namespace` comes back with Envoy (the apiserver loads webhook configurations and policies asynchronously). */
export async function waitUntilInjecting(plane: ControlPlane, namespace: string, timeoutMs = 120_000): Promise<void> {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe' }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0' }] } };
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const response = await plane.request('POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, pod);
    if (response.status === 201 && response.body.spec.containers.some((container: any) => container.name === 'envoy')) return;
    last = `${response.status} ${JSON.stringify(response.body?.message ?? response.body?.spec?.containers?.map((c: any) => c.name))}`;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`namespace ${namespace}: no injection within ${timeoutMs} ms (last: ${last})`);
}

export interface Quantiles {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  /** Share of observations at or under the lowest bucket bound (5 ms for the admission histograms). */
  readonly shareUnderFirstBucket: number;
  readonly firstBucket: number;
}

function quantiles(h: Histogram): Quantiles {
  const firstBucket = h.buckets.find(({ le }) => le > 0.000001)?.le ?? NaN;
  return { count: h.count, p50: quantile(h, 0.5), p99: quantile(h, 0.99), shareUnderFirstBucket: shareAtMost(h, firstBucket), firstBucket };
}

export interface AdmissionRun {
  readonly backend: ClusterBackend;
  readonly rate: number;
  readonly load: Omit<PodLoadResult, 'latenciesMs'> & { readonly p50Ms: number; readonly p99Ms: number };
  /** apiserver_admission_controller_admission_duration_seconds of the backend's plugin, pod-creating window only. */
  readonly plugin: Quantiles & { readonly name: string };
  /** The webhook's own histogram (per call), or the policies' (per mutation evaluated). */
  readonly detail: Quantiles & { readonly metric: string };
  /** The whole mutating admission step's summary quantiles, over the plane's life (its own start-up's creates included). */
  readonly step: { readonly p50: number; readonly p90: number; readonly p99: number; readonly count: number };
  readonly failOpen: number;
  readonly rejected: number;
  /** Webhook calls the apiserver counted, by HTTP code. */
  readonly webhookCalls?: Readonly<Record<string, number>>;
  /** CPU per pod, ms: the apiserver's, etcd's, and the webhook's replicas' together. */
  readonly cpuMsPerPod: { readonly apiserver: number; readonly etcd: number; readonly webhook?: number };
  /** Each replica's CPU per pod (ms), RSS at the end and its peak (MiB), and the connections the proxy gave it. */
  readonly replicas?: readonly { readonly cpuMsPerPod: number; readonly rssMiB: number; readonly peakMiB: number; readonly connections: number }[];
  readonly machine: MachineLoad;
}

const POLICY_PLUGIN = 'MutatingAdmissionPolicy';
const WEBHOOK_PLUGIN = 'MutatingAdmissionWebhook';

/** Creates the pods at `rate` and reads what admission added from the apiserver's metrics. */
export async function admissionRun(settings: ClusterSettings, injector: InstalledInjector, rate: number, runLabel: string): Promise<AdmissionRun> {
  const { plane, backend, replicas } = injector;
  const scrape = async () => parseMetrics((await plane.request('GET', '/metrics')).body as string);
  const measured = [injector.apiserverPid, injector.etcdPid, ...replicas.map((replica) => replica.pid)];
  // The proxy stands for kube-proxy's rules (in the kernel): its CPU is nobody's here, but not "other load".
  const ours = [...measured, ...(injector.proxy ? [injector.proxy.pid] : [])];
  const cpu = () => measured.map((pid) => processStats(pid).cpuMs);
  const before = await scrape();
  const cpuBefore = cpu();
  const machine = watchMachine();
  const load = await createPodsAtRate(plane, { rate, total: settings.pods, namespaces: benchNamespaces(settings.namespaces), podsPerDeployment: settings.podsPerDeployment, runLabel });
  const machineLoad = machine.stop(ours);
  const cpuAfter = cpu();
  const after = await scrape();
  const connections = injector.proxy ? await injector.proxy.connections() : [];
  const { latenciesMs, ...rest } = load;
  const spent = cpuAfter.map((value, index) => (value - cpuBefore[index]) / settings.pods);
  const webhook = callsWebhook(backend);
  const plugin = webhook ? WEBHOOK_PLUGIN : POLICY_PLUGIN;
  const creates = labelsAre({ operation: 'CREATE', type: 'admit' });
  const delta = (name: string, keep: (labels: Readonly<Record<string, string>>) => boolean) => histogramDelta(histogram(after, name, keep), histogram(before, name, keep));
  const counted = (name: string, keep: (labels: Readonly<Record<string, string>>) => boolean = () => true) => counterSum(after, name, keep) - counterSum(before, name, keep);
  const detailMetric = webhook ? 'apiserver_admission_webhook_admission_duration_seconds' : 'apiserver_mutating_admission_policy_check_duration_seconds';
  const detailKeep = webhook ? creates : () => true;
  const failOpen = webhook ? counted('apiserver_admission_webhook_fail_open_count') : counted('apiserver_mutating_admission_policy_check_total', (labels) => labels.error_type !== 'no_error');
  const rejected = webhook ? counted('apiserver_admission_webhook_rejection_count') : counted('apiserver_admission_controller_admission_duration_seconds_count', (labels) => labels.name === POLICY_PLUGIN && labels.rejected === 'true');
  return {
    backend,
    rate,
    load: { ...rest, p50Ms: latenciesMs[Math.floor(latenciesMs.length * 0.5)], p99Ms: latenciesMs[Math.floor(latenciesMs.length * 0.99)] },
    plugin: { name: plugin, ...quantiles(delta('apiserver_admission_controller_admission_duration_seconds', (labels) => creates(labels) && labels.name === plugin)) },
    detail: { metric: detailMetric, ...quantiles(delta(detailMetric, detailKeep)) },
    step: stepSummary(after),
    failOpen,
    rejected,
    ...(webhook ? { webhookCalls: webhookCallsByCode(after, before) } : {}),
    cpuMsPerPod: { apiserver: spent[0], etcd: spent[1], ...(replicas.length > 0 ? { webhook: spent.slice(2).reduce((a, b) => a + b, 0) } : {}) },
    ...(replicas.length > 0
      ? {
          replicas: replicas.map((replica, index) => {
            const stats = processStats(replica.pid);
            return { cpuMsPerPod: spent[2 + index], rssMiB: stats.rssKb / 1024, peakMiB: stats.peakKb / 1024, connections: connections[index] };
          }),
        }
      : {}),
    machine: machineLoad,
  };
}

function stepSummary(samples: readonly Sample[]): AdmissionRun['step'] {
  const keep = labelsAre({ operation: 'CREATE', type: 'admit', rejected: 'false' });
  const at = (q: string) => counterSum(samples, 'apiserver_admission_step_admission_duration_seconds_summary', (labels) => keep(labels) && labels.quantile === q);
  return { p50: at('0.5'), p90: at('0.9'), p99: at('0.99'), count: counterSum(samples, 'apiserver_admission_step_admission_duration_seconds_summary_count', keep) };
}

function webhookCallsByCode(after: readonly Sample[], before: readonly Sample[]): Record<string, number> {
  const codes = new Set(after.filter((sample) => sample.name === 'apiserver_admission_webhook_request_total').map((sample) => sample.labels.code));
  const byCode: Record<string, number> = {};
  for (const code of codes) {
    const keep = labelsAre({ code, operation: 'CREATE' });
    const calls = counterSum(after, 'apiserver_admission_webhook_request_total', keep) - counterSum(before, 'apiserver_admission_webhook_request_total', keep);
    if (calls > 0) byCode[code] = calls;
  }
  return byCode;
}

export { INJECTOR_NAMESPACE };
