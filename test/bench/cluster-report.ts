// The section `npm run bench:cluster` writes into BENCHMARKS.md: the machine, the bounds and whether
// they held, then each measurement with what it is.
import { fmt, table } from './stats';
import type { ClusterReport } from './cluster-bench';
import type { AdmissionRun, Quantiles } from './cluster-admission';
import { describeOthers } from './machine-load';

/** The bounds of docs/benchmarks.md#at-cluster-scale. */
export const CLUSTER_BOUNDS = {
  reconcilerPeakMiB: 128,
  fullPassCpuSeconds: 2,
  oneNamespacePassCpuSeconds: 0.2,
  namespaceWatchGrowthMiB: 10,
  statusSeconds: 10,
  statusPeakMiB: 256,
} as const;

interface Verdict {
  readonly target: string;
  readonly measured: string;
  readonly met: boolean;
}

const msOf = (seconds: number) => (Number.isNaN(seconds) ? 'n/a' : `${fmt(seconds * 1000)} ms`);
const mib = (value: number) => `${value.toFixed(1)} MiB`;
const backendName = (backend: string) => (backend === 'webhook' ? 'webhook' : backend === 'goBaseline' ? 'Go baseline' : 'policies');
/** A run's backend, with its replicas: the webhooks ran with one and with two. */
const runName = (run: AdmissionRun) => (run.replicas ? `${backendName(run.backend)}, ${run.replicas.length} replica${run.replicas.length === 1 ? '' : 's'}` : backendName(run.backend));

export function clusterVerdicts(report: ClusterReport): Verdict[] {
  const verdicts: Verdict[] = [];
  // The bounds are ours: the Go baseline is a yardstick, its runs are in the tables.
  const runs = report.runs.filter((run) => run.backend !== 'goBaseline');
  verdicts.push({
    target: 'Every pod admitted with its injection, 0 fail-open and 0 rejected, in every run',
    measured: runs.map((run) => `${runName(run)} ${run.rate}/s: ${run.load.created} created, ${run.load.failed} failed, ${run.load.notInjected} without Envoy, ${run.failOpen} fail-open, ${run.rejected} rejected`).join('; '),
    met: runs.every((run) => run.load.failed === 0 && run.load.notInjected === 0 && run.failOpen === 0 && run.rejected === 0 && run.load.created === report.settings.pods),
  });
  const passes = report.reconciler.passes;
  const peak = Math.max(...passes.map((pass) => pass.peakMiB));
  verdicts.push({ target: `Reconciler peak RSS ≤ ${CLUSTER_BOUNDS.reconcilerPeakMiB} MiB`, measured: `${mib(peak)} (${report.reconciler.nodeOptions || 'no NODE_OPTIONS'})`, met: peak <= CLUSTER_BOUNDS.reconcilerPeakMiB });
  const [first, , , warm] = passes;
  const fullPass = (pass: typeof first, what: string): Verdict => ({
    target: `Reconciler full pass at ${report.settings.pods.toLocaleString('en-US')} pods ≤ ${CLUSTER_BOUNDS.fullPassCpuSeconds} s of CPU: ${what}`,
    measured: `${pass.cpuSeconds} s CPU (${pass.seconds} s wall, listed ${pass.listed}, ${pass.pods} pods)`,
    met: pass.listed === 'all' && pass.cpuSeconds <= CLUSTER_BOUNDS.fullPassCpuSeconds,
  });
  verdicts.push(fullPass(warm, 'a full pass of a running reconciler (the injector changed, every pod still up to date)'));
  verdicts.push(fullPass(first, 'its first pass, just started (its code not yet compiled by V8)'));
  const one = passes[2];
  verdicts.push({
    target: `Reconciler pass after one namespace changed ≤ ${CLUSTER_BOUNDS.oneNamespacePassCpuSeconds} s (CPU)`,
    measured: `${one.cpuSeconds} s CPU (${one.seconds} s wall, listed ${one.listed} namespace${one.listed === 1 ? '' : 's'}, ${one.pods} pods)`,
    met: one.listed === 1 && one.cpuSeconds <= CLUSTER_BOUNDS.oneNamespacePassCpuSeconds,
  });
  const watch = report.namespaceWatch;
  verdicts.push({
    target: `Webhook RSS with ${watch.large.toLocaleString('en-US')} namespaces watched within ${CLUSTER_BOUNDS.namespaceWatchGrowthMiB} MiB of its RSS with ${watch.small}, each replica`,
    measured: watch.replicas.map((replica, index) => `replica ${index}: ${mib(replica.smallMiB)} → ${mib(replica.largeMiB)} (${signed(replica.largeMiB - replica.smallMiB)})`).join('; '),
    met: watch.replicas.every((replica) => replica.largeMiB - replica.smallMiB <= CLUSTER_BOUNDS.namespaceWatchGrowthMiB),
  });
  verdicts.push({
    target: `\`status -A\` over ${report.settings.pods.toLocaleString('en-US')} pods ≤ ${CLUSTER_BOUNDS.statusSeconds} s and ≤ ${CLUSTER_BOUNDS.statusPeakMiB} MiB, each run`,
    measured: report.status.map((run) => `${run.seconds} s (${run.cpuSeconds.toFixed(2)} s CPU), peak ${mib(run.peakMiB)}`).join('; '),
    met: report.status.every((run) => run.seconds <= CLUSTER_BOUNDS.statusSeconds && run.peakMiB <= CLUSTER_BOUNDS.statusPeakMiB),
  });
  return verdicts;
}

const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(1)} MiB`;
const quantileCells = (q: Quantiles) => [msOf(q.p50), msOf(q.p99), `${(q.shareUnderFirstBucket * 100).toFixed(1)}% ≤ ${fmt(q.firstBucket * 1000)} ms`, q.count.toLocaleString('en-US')];

function admissionTables(runs: readonly AdmissionRun[]): string {
  const latency = table(
    ['Backend', 'Rate', 'Created (achieved/s)', 'Plugin p50', 'Plugin p99', 'Plugin share', 'Plugin runs', 'Own histogram p50', 'p99', 'Step p50 / p99 (summary)', 'Create p50 / p99 (client)'],
    runs.map((run) => [
      runName(run),
      `${run.rate}/s`,
      `${run.load.created.toLocaleString('en-US')} (${(run.load.created / run.load.seconds).toFixed(0)}/s)`,
      ...quantileCells(run.plugin),
      msOf(run.detail.p50),
      msOf(run.detail.p99),
      `${msOf(run.step.p50)} / ${msOf(run.step.p99)}`,
      `${fmt(run.load.p50Ms)} ms / ${fmt(run.load.p99Ms)} ms`,
    ]),
  );
  const cost = table(
    ['Backend', 'Rate', 'Fail-open', 'Rejected', 'Webhook calls by code', 'CPU per pod: apiserver', 'etcd', 'webhook (its replicas together)', 'each replica', 'Webhook RSS at the end (peak)', 'Connections per replica', 'Other load (1-min load avg before → after)'],
    runs.map((run) => [
      runName(run),
      `${run.rate}/s`,
      String(run.failOpen),
      String(run.rejected),
      run.webhookCalls ? Object.entries(run.webhookCalls).map(([code, count]) => `${code}: ${count}`).join(', ') : '-',
      `${fmt(run.cpuMsPerPod.apiserver)} ms`,
      `${fmt(run.cpuMsPerPod.etcd)} ms`,
      run.cpuMsPerPod.webhook === undefined ? '-' : `${fmt(run.cpuMsPerPod.webhook)} ms`,
      run.replicas ? run.replicas.map((replica) => `${fmt(replica.cpuMsPerPod)} ms`).join(', ') : '-',
      run.replicas ? run.replicas.map((replica) => `${mib(replica.rssMiB)} (${mib(replica.peakMiB)})`).join(', ') : '-',
      run.replicas ? run.replicas.map((replica) => String(replica.connections)).join(', ') : '-',
      `${describeOthers(run.machine)} (${run.machine.loadAverage.map((value) => value.toFixed(1)).join(' → ')})`,
    ]),
  );
  return `${latency}\n\n${cost}`;
}

/**
 * Ours against the Go baseline at each rate and replica count both ran: the webhook plugin's and the
 * webhook calls' quantiles, CPU per pod and connections, side by side, with the ratio ours / Go.
 */
export function goBaselineTable(runs: readonly AdmissionRun[]): string | undefined {
  const pairs = runs
    .filter((run) => run.backend === 'webhook' && run.replicas)
    .map((ours) => ({ ours, go: runs.find((run) => run.backend === 'goBaseline' && run.rate === ours.rate && run.replicas?.length === ours.replicas!.length) }))
    .filter((pair): pair is { ours: AdmissionRun; go: AdmissionRun } => pair.go !== undefined);
  if (pairs.length === 0) return undefined;
  const perReplica = (run: AdmissionRun, show: (replica: NonNullable<AdmissionRun['replicas']>[number]) => string) => run.replicas!.map(show).join(', ');
  const measures: [string, (run: AdmissionRun) => number | undefined, (run: AdmissionRun) => string][] = [
    ['Plugin p50', (run) => run.plugin.p50, (run) => msOf(run.plugin.p50)],
    ['Plugin p99', (run) => run.plugin.p99, (run) => msOf(run.plugin.p99)],
    ['Webhook call p50', (run) => run.detail.p50, (run) => msOf(run.detail.p50)],
    ['Webhook call p99', (run) => run.detail.p99, (run) => msOf(run.detail.p99)],
    ['Webhook CPU per pod, replicas together', (run) => run.cpuMsPerPod.webhook, (run) => `${fmt(run.cpuMsPerPod.webhook ?? NaN)} ms`],
    ['Webhook CPU per pod, each replica', () => undefined, (run) => perReplica(run, (replica) => `${fmt(replica.cpuMsPerPod)} ms`)],
    ['apiserver CPU per pod', (run) => run.cpuMsPerPod.apiserver, (run) => `${fmt(run.cpuMsPerPod.apiserver)} ms`],
    ['Connections, each replica', (run) => run.replicas!.reduce((total, replica) => total + replica.connections, 0), (run) => perReplica(run, (replica) => String(replica.connections))],
    ['Fail-open / rejected', () => undefined, (run) => `${run.failOpen} / ${run.rejected}`],
  ];
  const rows: string[][] = [];
  for (const { ours, go } of pairs) {
    for (const [name, value, show] of measures) {
      const [a, b] = [value(ours), value(go)];
      const ratio = a === undefined || b === undefined || Number.isNaN(a) || Number.isNaN(b) || b <= 0 ? '' : `${(a / b).toFixed(2)}x`;
      rows.push([`${ours.rate}/s`, String(ours.replicas!.length), name, show(ours), show(go), ratio]);
    }
  }
  return table(['Rate', 'Replicas', 'Measure', 'Ours (webhook)', 'Go baseline', 'Ours / Go'], rows);
}

function reconcilerTable(report: ClusterReport): string {
  const rows = report.reconciler.passes.map((pass) => [
    pass.label,
    pass.listed === 'all' ? 'every pod' : `${pass.listed} namespace${pass.listed === 1 ? '' : 's'}`,
    pass.pods.toLocaleString('en-US'),
    `${pass.seconds} s`,
    `${pass.cpuSeconds} s`,
    String(pass.requests),
    `${(pass.bytesRead / 1024 / 1024).toFixed(2)} MiB`,
    mib(pass.rssMiB),
    mib(pass.peakMiB),
  ]);
  const kinds = report.reconciler.passes.map((pass) => `- ${pass.label}: ${Object.entries(pass.requestsByKind).map(([kind, count]) => `${kind} ${count}`).join(', ') || 'none'}`);
  return `${table(['Pass', 'Listed', 'Pods judged', 'Wall', 'CPU', 'Requests', 'Bytes read', 'RSS after', 'Peak RSS so far'], rows)}\n\nRequests by verb and resource (the pass and the wait before it):\n\n${kinds.join('\n')}`;
}

function goBaselineSection(report: ClusterReport): string[] {
  const skipped = report.skipped.map((line) => `- ${line}`);
  const compared = goBaselineTable(report.runs);
  if (!compared) return skipped.length > 0 ? [...skipped, ''] : [];
  return [
    '### Ours against a Go webhook as the field writes one',
    '',
    `The Go baseline (${report.goBaseline}): net/http over TLS, HTTP/2 offered by ALPN as Go's server does by default (the apiserver's webhook client speaks HTTP/2 to a server that offers it, HTTP/1.1 to ours), the AdmissionReview and the pod decoded with k8s.io/api's types by apimachinery's deserializer, the same fixed Envoy patch for every pod, no log line per request. It is registered with our synthesized webhook configuration as it is (rules, selectors, failurePolicy, timeout), behind the same proxy, so the apiserver calls it as it calls ours; its replicas are processes on the host, GOMAXPROCS as Go sets it (both cores). Both webhooks run with one replica and with two, each on a fresh plane with fresh processes, so ours pays V8's compilation of its code during the run (docs/benchmarks.md: what a steady state measures). The ratio is ours over the Go baseline with as many replicas.`,
    '',
    compared,
    '',
    ...skipped,
    ...(skipped.length > 0 ? [''] : []),
  ];
}

/** The section, without its markers. */
export function renderClusterSection(report: ClusterReport): string {
  const verdicts = clusterVerdicts(report);
  const missed = verdicts.filter((verdict) => !verdict.met);
  const pods = report.settings.pods.toLocaleString('en-US');
  const host = report.host;
  return [
    '## Cluster scale: a real kube-apiserver (`npm run bench:cluster`)',
    '',
    `Generated by \`npm run bench:cluster\` (test/bench/cluster-bench.ts) on ${report.date.toISOString()}; the run took ${report.totalSeconds.toFixed(0)} s. Reproduce with:`,
    '',
    '```sh',
    'KUBE_APISERVER=/path/to/kube-apiserver ETCD=/path/to/etcd DEPLOYED_NODE=/path/to/node22 npm run bench:cluster',
    '```',
    '',
    table(
      ['Machine', ''],
      [
        ['CPU', `${host.cpu}, ${host.cores} cores, ${host.memoryGb} GiB`],
        ['kube-apiserver / etcd', `${report.apiserverVersion} / ${report.etcdVersion} (policies as admissionregistration.k8s.io/${report.policyApiVersion})`],
        ['Webhook and reconciler run on', `${report.deployedNode} (the synthesized Deployments' image runs Node 22)`],
        ['`status -A` runs on', `${report.cliNode}`],
        ['Load average (1/5/15 min) before / after', `${report.loadAverage.before.map((v) => v.toFixed(2)).join(' ')} / ${report.loadAverage.after.map((v) => v.toFixed(2)).join(' ')}`],
      ],
    ),
    '',
    `For each backend and each rate, a fresh etcd and kube-apiserver on 127.0.0.1, with the default app (Envoy offering two overrides, one read from the namespace; the reconciler on, a pass every 5 s) installed as synthesized: every object created as it is, but for the webhook configuration's clientConfig, a URL on 127.0.0.1 (no Service endpoints here). The webhook runs as its Deployment runs it (one replica, then two as synthesized: its command, \`node -e <loader>\` with the bundle from the output's ConfigMap, its env, its ConfigMaps and Secret written as the kubelet mounts them, its ServiceAccount's token at the in-cluster path in a mount namespace of its own), behind a TCP proxy that gives each new connection to the next replica, as kube-proxy does (at nice -10: kube-proxy's rules run in the kernel, and a proxy starved on this loaded machine stalled bodies past the webhook's 2 s slow-body cut, which the apiserver then counted as fail-open); the policies run inside the apiserver. ${report.settings.namespaces} namespaces selected by the injector, each with Envoy's memory request as its default; then ${pods} pods of Deployments (${report.settings.podsPerDeployment} pods a Deployment, owned by a ReplicaSet) created in turn across them at a fixed rate, open loop. No node: the pods are stored and stay Pending. This machine is shared (2 cores): every table says what else ran, and CPU seconds (from /proc) are the figures load disturbs least.`,
    '',
    '### Bounds',
    '',
    table(['Bound', 'Measured', 'Met'], verdicts.map((verdict) => [verdict.target, verdict.measured, verdict.met ? 'yes' : '**no**'])),
    '',
    missed.length === 0 ? 'Every bound held.' : `Missed: ${missed.map((verdict) => verdict.target).join('; ')}.`,
    '',
    `### Admission of ${pods} pods, as the apiserver measured it`,
    '',
    admissionTables(report.runs),
    '',
    ...goBaselineSection(report),
    "- **Plugin**: `apiserver_admission_controller_admission_duration_seconds` of the backend's admission plugin (`MutatingAdmissionWebhook` or `MutatingAdmissionPolicy`), creates only, between a scrape before the pods and one after; p50 and p99 interpolated in the buckets as Prometheus' `histogram_quantile` does. Its lowest bucket is 5 ms, so below it the quantiles say little: the share under 5 ms says more. The apiserver runs each mutating plugin twice a pod here (its reinvocation), the second time calling nothing: hence twice as many runs as pods.",
    '- **Own histogram**: the webhook\'s calls (`apiserver_admission_webhook_admission_duration_seconds`, same buckets), or each policy mutation evaluated (`apiserver_mutating_admission_policy_check_duration_seconds`, buckets 0.0005 ms, 1, 10, 100 ms: a mutation per policy that matches, several a pod).',
    '- **Step**: `apiserver_admission_step_admission_duration_seconds_summary`, the whole mutating step of every create, as the apiserver\'s own summary quantiles over the plane\'s life (its start-up\'s ~200 creates included).',
    '- **Fail-open**: `apiserver_admission_webhook_fail_open_count` (the synthesized failurePolicy is Ignore), or policy mutations that ended in an error (`apiserver_mutating_admission_policy_check_total` with an `error_type` other than `no_error`: with failurePolicy Ignore, ignored). **Rejected**: `apiserver_admission_webhook_rejection_count`, or the policy plugin\'s rejected creates.',
    '- **CPU per pod**: each process\'s user + system time from /proc over the creates, divided by the pods.',
    '',
    `### The reconciler against the apiserver holding the pods`,
    '',
    `On the last webhook plane (its ${pods} pods, all up to date), as synthesized: \`${['node', report.reconciler.nodeFlags].filter(Boolean).join(' ')} -e <loader>\`, its env (\`${report.reconciler.nodeOptions}\`), its settings ConfigMap, its ServiceAccount's token with its synthesized ClusterRole and Role. Wall and CPU are from its own \`pass done\` log line (CPU of the whole process over the pass: the pod watch and the Lease included). Requests: \`apiserver_request_total\` from clients other than the apiserver itself, this bench's own requests left out. Bytes read: what the apiserver sent it, counted by a TCP proxy between them (TLS records included). Both cover the pass and the wait before it.`,
    '',
    reconcilerTable(report),
    '',
    `### The webhook's namespace watch`,
    '',
    `A plane of its own: ${report.namespaceWatch.small} namespaces when the webhook's two replicas start, then ${report.namespaceWatch.large.toLocaleString('en-US')}, each with Envoy's memory-request annotation. RSS is the median of 20 samples over 5 s, 5 s after every namespace is in the replica's table (its \`sidecar_injector_namespace_defaults_entries\`).`,
    '',
    table(
      ['Replica', `RSS, ${report.namespaceWatch.small} namespaces`, `RSS, ${report.namespaceWatch.large.toLocaleString('en-US')} namespaces`, 'Difference', 'Table entries', 'Table bytes', 'Peak RSS'],
      report.namespaceWatch.replicas.map((replica, index) => [String(index), mib(replica.smallMiB), mib(replica.largeMiB), signed(replica.largeMiB - replica.smallMiB), String(replica.entries), `${(replica.tableBytes / 1024).toFixed(0)} KiB`, mib(replica.peakMiB)]),
    ),
    '',
    '### `status -A` over the pods',
    '',
    `\`node lib/webhook/cli/main.js status -A --from <the output> --kubeconfig <admin>\` (the CLI as npm installs it, built by \`npm run build\`), under \`/usr/bin/time\`, twice.`,
    '',
    table(
      ['Run', 'Wall', 'CPU', 'Peak RSS', 'Exit'],
      report.status.map((run, index) => [String(index + 1), `${run.seconds} s`, `${run.cpuSeconds.toFixed(2)} s`, mib(run.peakMiB), String(run.exitCode)]),
    ),
    '',
    '```text',
    report.status[0]?.head ?? '',
    '```',
  ].join('\n');
}
