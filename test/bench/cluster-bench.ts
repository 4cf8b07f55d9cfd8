// `npm run bench:cluster`: the injector at cluster scale on a real kube-apiserver and etcd (not in CI).
//
// Binaries from the environment as the e2e suites take them (KUBE_APISERVER and ETCD, or
// KUBEBUILDER_ASSETS). For each backend (the webhook, then the MutatingAdmissionPolicies, then the Go
// baseline webhook of test/bench/go-baseline/, registered as ours is; both webhooks with one replica and with two) and
// each rate (50/s, then 200/s): a fresh control plane, the default app (with Envoy's overrides and the reconciler)
// installed as synthesized, 200 namespaces, then 10,000 pods of Deployments created through the apiserver
// at that rate. No node: the pods are stored and stay Pending. What admission added is read from the
// apiserver's own /metrics. Then, on the last webhook plane (its 10,000 pods): `status -A` and the
// reconciler's passes; and on a plane of its own, the webhook's memory with 20 and with 2,000 namespaces
// watched. Writes its section of BENCHMARKS.md (between markers: the rest is `npm run bench`'s).
//
// The Go baseline is built with `go build` into the work directory at the start; without Go, that
// backend is skipped with one line.
//
// CLUSTER_PODS, CLUSTER_NAMESPACES, CLUSTER_RATES (50,200), CLUSTER_BACKENDS (webhook,admissionPolicy,
// goBaseline) and CLUSTER_WATCHED_NAMESPACES (2000) shrink a run to try the script; a run with any of them changed
// prints its section instead of writing it. The work directory (etcd's data, every process's log) is
// removed after a run, kept after a failure. DEPLOYED_NODE: the node binary the webhook and the reconciler
// run on (the synthesized Deployments' image runs Node 22); default, this one.
// CLUSTER_RECONCILER_NODE_ARGS (node options before the reconciler's command's own, e.g. --trace-gc) and
// CLUSTER_RECONCILER_LOG (where its log is copied) look into its passes; CLUSTER_WEBHOOK_NODE_ARGS does
// the same for the webhook's replicas (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). CLUSTER_WARM_PODS
// creates that many pods through each plane before the measured ones, unmeasured: the webhooks' steady
// state, V8 done compiling ours (docs/benchmarks.md). Any of these counts as a changed run.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { binaryVersion, findBinaries, policyApiVersionFor, policyApiserverFlags } from '../e2e/support/control-plane';
import { REPO_ROOT, machine } from './bench-support';
import { withClusterSection } from './benchmarks-sections';
import { type AdmissionRun, BENCH_NAMESPACE_METADATA, type ClusterBackend, type ClusterSettings, admissionRun, benchNamespaces, createNamespaces, installInjector, waitUntilInjecting } from './cluster-admission';
import { type NamespaceWatchResult, type ReconcilerResult, type StatusRun, namespaceWatch, reconcilerPasses, statusAll } from './cluster-extras';
import { renderClusterSection } from './cluster-report';
import { buildGoBaseline, findGo, GO_CANDIDATES, goVersion } from './go-programs';

const OUTPUT = path.join(REPO_ROOT, 'BENCHMARKS.md');
const DEFAULTS = { pods: 10_000, namespaces: 200, rates: '50,200', backends: 'webhook,admissionPolicy,goBaseline', watched: 2000 };
const began = performance.now();
const progress = (line: string) => process.stdout.write(`[bench:cluster ${((performance.now() - began) / 1000).toFixed(0).padStart(5)} s] ${line}\n`);

export interface ClusterReport {
  readonly date: Date;
  readonly host: ReturnType<typeof machine>;
  readonly apiserverVersion: string;
  readonly etcdVersion: string;
  readonly policyApiVersion: string;
  readonly deployedNode: string;
  readonly cliNode: string;
  readonly settings: { readonly pods: number; readonly namespaces: number; readonly podsPerDeployment: number };
  readonly runs: readonly AdmissionRun[];
  /** How the Go baseline was built, when it ran. */
  readonly goBaseline?: string;
  /** Backends asked for that did not run, each with why. */
  readonly skipped: readonly string[];
  readonly namespaceWatch: NamespaceWatchResult;
  readonly reconciler: ReconcilerResult;
  readonly status: readonly StatusRun[];
  readonly totalSeconds: number;
  readonly loadAverage: { readonly before: readonly number[]; readonly after: readonly number[] };
  readonly defaultsChanged: boolean;
}

function deployedNodeVersion(node: string): string {
  return binaryVersion(node);
}

/** The webhook replicas each backend runs with: ours and the Go baseline alone and as the Deployment runs ours (2); the policies need none. */
const replicaCounts = (backend: ClusterBackend): readonly number[] => (backend === 'admissionPolicy' ? [2] : [1, 2]);

/**
 * For each backend and rate (and the Go baseline's replica counts), a plane of its own, its namespaces, and the pods created at that rate; on the
 * last webhook plane, with its pods still there, `status -A` (twice) and the reconciler's passes.
 */
async function admissionRuns(settings: ClusterSettings, backends: readonly ClusterBackend[], rates: readonly number[]): Promise<{ runs: AdmissionRun[]; extras?: { reconciler: ReconcilerResult; status: StatusRun[] } }> {
  const runs: AdmissionRun[] = [];
  let extras: { reconciler: ReconcilerResult; status: StatusRun[] } | undefined;
  const planned = backends.flatMap((backend) => rates.flatMap((rate, index) => replicaCounts(backend).map((replicaCount) => ({ backend, rate, index, replicaCount }))));
  for (const { backend, rate, index, replicaCount } of planned) {
    const label = backend === 'admissionPolicy' ? `${backend}-${rate}` : `${backend}-${rate}-${replicaCount}`;
    progress(`${label}: starting a control plane and installing the injector`);
    const injector = await installInjector(settings, backend, label, undefined, replicaCount);
    try {
      await createNamespaces(injector.plane, benchNamespaces(settings.namespaces), BENCH_NAMESPACE_METADATA);
      await waitUntilInjecting(injector.plane, 'bench-000');
      const warm = Number(process.env.CLUSTER_WARM_PODS ?? 0);
      if (warm > 0) {
        progress(`${label}: warming up with ${warm} pods at ${rate}/s (not measured)`);
        await admissionRun({ ...settings, pods: warm }, injector, rate, `6b4c7d8e${index}`);
      }
      progress(`${label}: creating ${settings.pods} pods in ${settings.namespaces} namespaces at ${rate}/s`);
      const run = await admissionRun(settings, injector, rate, `7c5d8f9b${index}`);
      runs.push(run);
      const calls = run.replicas ? `; ${run.detail.metric} p50 ${(run.detail.p50 * 1000).toFixed(2)} ms p99 ${(run.detail.p99 * 1000).toFixed(2)} ms; CPU per pod ${run.replicas.map((replica) => replica.cpuMsPerPod.toFixed(2)).join(' + ')} ms; connections ${run.replicas.map((replica) => replica.connections).join(', ')}` : '';
      progress(`${label}: ${run.load.created} created (${run.load.failed} failed, ${run.load.notInjected} not injected) in ${run.load.seconds.toFixed(0)} s; ${run.plugin.name} p50 ${(run.plugin.p50 * 1000).toFixed(2)} ms p99 ${(run.plugin.p99 * 1000).toFixed(2)} ms${calls}; fail-open ${run.failOpen}, rejected ${run.rejected}`);
      if (backend === 'webhook' && index === rates.length - 1 && replicaCount === 2) {
        progress(`${label}: status -A over the pods, twice`);
        const status = [await statusAll(injector), await statusAll(injector)];
        for (const statusRun of status) progress(`status -A: ${statusRun.seconds} s, ${statusRun.cpuSeconds.toFixed(2)} s CPU, peak ${statusRun.peakMiB.toFixed(0)} MiB, exit ${statusRun.exitCode}`);
        progress(`${label}: the reconciler's passes`);
        extras = { status, reconciler: await reconcilerPasses(settings, injector) };
      }
    } finally {
      await injector.stop();
    }
  }
  return { runs, extras };
}

async function main(): Promise<void> {
  const binaries = findBinaries();
  if (typeof binaries === 'string') {
    process.stderr.write(`npm run bench:cluster needs etcd and kube-apiserver: ${binaries.replace('skipped: ', '')}\n`);
    process.exit(2);
  }
  const env = process.env;
  const pods = Number(env.CLUSTER_PODS ?? DEFAULTS.pods);
  const namespaces = Number(env.CLUSTER_NAMESPACES ?? DEFAULTS.namespaces);
  const rates = (env.CLUSTER_RATES ?? DEFAULTS.rates).split(',').map(Number);
  const asked = (env.CLUSTER_BACKENDS ?? DEFAULTS.backends).split(',') as ClusterBackend[];
  const watched = Number(env.CLUSTER_WATCHED_NAMESPACES ?? DEFAULTS.watched);
  const defaultsChanged = pods !== DEFAULTS.pods || namespaces !== DEFAULTS.namespaces || rates.join(',') !== DEFAULTS.rates || asked.join(',') !== DEFAULTS.backends || watched !== DEFAULTS.watched || process.env.CLUSTER_RECONCILER_NODE_ARGS !== undefined || process.env.CLUSTER_WEBHOOK_NODE_ARGS !== undefined || process.env.CLUSTER_WARM_PODS !== undefined;
  const apiserverVersion = binaryVersion(binaries.kubeApiserver);
  const policyApiVersion = policyApiVersionFor(apiserverVersion);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cluster-'));
  const skipped: string[] = [];
  let goBaseline: { binary: string; built: string } | undefined;
  if (asked.includes('goBaseline')) {
    const go = findGo();
    if (!go) skipped.push(`goBaseline: skipped, Go is not installed (looked for ${GO_CANDIDATES.join(' and ')} on PATH)`);
    else {
      const start = performance.now();
      const binary = buildGoBaseline(go, fs.mkdtempSync(path.join(work, 'go-baseline-')));
      goBaseline = { binary, built: `test/bench/go-baseline/ (k8s.io/api and k8s.io/apimachinery v0.37.2) built with ${goVersion(go)}` };
      progress(`the Go baseline: ${goBaseline.built}, in ${((performance.now() - start) / 1000).toFixed(1)} s`);
    }
  }
  for (const line of skipped) progress(line);
  const backends = asked.filter((backend) => backend !== 'goBaseline' || goBaseline);
  const settings: ClusterSettings = {
    binaries,
    // Both backends' planes alike: the policy API served, used or not.
    apiserverFlags: policyApiserverFlags(policyApiVersion),
    policyApiVersion,
    deployedNode: env.DEPLOYED_NODE ?? process.execPath,
    pods,
    namespaces,
    podsPerDeployment: 10,
    work,
    progress,
    goBaseline: goBaseline?.binary,
  };
  const loadBefore = os.loadavg();
  progress(`kube-apiserver ${apiserverVersion}, policies as admissionregistration.k8s.io/${policyApiVersion}; webhook and reconciler on ${settings.deployedNode} (${deployedNodeVersion(settings.deployedNode)}); work dir ${work}`);
  try {
    const { runs, extras } = await admissionRuns(settings, backends, rates);
    progress(`the webhook's namespace watch: 20, then ${watched} namespaces`);
    const watch = await namespaceWatch(settings, 20, watched);
    if (!extras) throw new Error('no webhook run: the reconciler and status -A run on the last webhook plane');
    const report: ClusterReport = {
      date: new Date(),
      host: machine(),
      apiserverVersion,
      etcdVersion: binaryVersion(binaries.etcd),
      policyApiVersion,
      deployedNode: deployedNodeVersion(settings.deployedNode),
      cliNode: process.version,
      settings: { pods, namespaces, podsPerDeployment: settings.podsPerDeployment },
      runs,
      goBaseline: goBaseline?.built,
      skipped,
      namespaceWatch: watch,
      reconciler: extras.reconciler,
      status: extras.status,
      totalSeconds: (performance.now() - began) / 1000,
      loadAverage: { before: loadBefore, after: os.loadavg() },
      defaultsChanged,
    };
    const section = renderClusterSection(report);
    if (defaultsChanged) {
      process.stdout.write(`${section}\n(not written to BENCHMARKS.md: CLUSTER_* changed the run)\n`);
    } else {
      fs.writeFileSync(OUTPUT, withClusterSection(fs.existsSync(OUTPUT) ? fs.readFileSync(OUTPUT, 'utf8') : '# Benchmarks\n', section));
      progress(`wrote its section of ${path.relative(process.cwd(), OUTPUT)}`);
    }
    // The planes' data (etcd, logs) is hundreds of MB: kept only when the run failed, to read why.
    fs.rmSync(work, { recursive: true, force: true });
  } catch (error) {
    process.stderr.write(`${(error as Error).stack}\nlogs and data kept in ${work}\n`);
    process.exit(1);
  }
}

void main();
