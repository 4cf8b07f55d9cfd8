// npm run e2e:node, the reconciler (issue 38): on its own one-node cluster (support/node-suite.ts), the
// apiserver authorizing with RBAC, the default app with the reconciler on (missing: restart, outdated:
// in-place), applied as `kubectl apply -f dist/` applies it. An outage rehearsed: the injector scaled
// to 0 while a Deployment is created bare; nothing restarted while it is down, and an Event says why;
// once it is back, exactly one restart, the budget never broken. Then the pods it must leave alone, an
// Envoy bump repaired in place, the acting replica killed mid-repair, and its Events and PolicyReport
// next to `status -o json`; and an injection in audit mode. The reconciler runs with exactly the RBAC
// it was synthesized with. On the policy backend the outage is the pods' policy binding deleted: a
// Deployment admitted before its policy is bound again is that backend's own case of pods admitted bare.
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeCluster } from './support/node-cluster';
import { cli, describeRun, isReady, kubectl, listPods } from './support/node-checks';
import {
  BACKEND,
  ENABLED,
  ENVOY_FIRST,
  ENVOY_IN_PLACE,
  INJECTOR_NAMESPACE,
  WEBHOOK,
  app,
  apply,
  applyConfig,
  dist,
  namespace,
  progress,
  shown,
  skip,
  startSuite,
  stopSuite,
  variant,
} from './support/node-suite';

const RECONCILER = { missing: 'restart', outdated: 'in-place', intervalSeconds: 5, repairsPerMinute: 6 } as const;
const LEASE = 'sidecar-injector-reconciler';

let cluster: NodeCluster;
before(async () => {
  if (!skip) cluster = await startSuite();
});
after(stopSuite);

const getJson = (args: readonly string[]) => JSON.parse(kubectl(cluster, [...args, '-o', 'json']));
/** The reconciler replica that holds the Lease (its pod's name): the one acting, and logging its passes. */
const actingReplica = (): string => getJson(['-n', INJECTOR_NAMESPACE, 'get', 'lease', LEASE]).spec.holderIdentity;
const replicaSets = (ns: string, name: string) => getJson(['-n', ns, 'get', 'replicasets', '-l', `app=${name}`]).items.map((rs: any) => rs.metadata.name).sort();
const eventsOf = (ns: string) => getJson(['-n', ns, 'get', 'events']).items.filter((event: any) => event.source?.component === 'sidecar-injector-reconciler' || event.reportingComponent === 'sidecar-injector-reconciler');

function deployment(ns: string, name: string, replicas: number): void {
  apply({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [app('app')] } } },
  });
  kubectl(cluster, ['-n', ns, 'rollout', 'status', `deploy/${name}`, '--timeout=180s']);
}

const hasEnvoy = (pod: any) => pod.spec.containers.some((container: any) => container.name === 'envoy');

/** The policy backend's binding of the pods' policy: deleted, pods are admitted bare, as with the webhook scaled to 0. */
const PODS_BINDING = 'mutatingadmissionpolicybindings.admissionregistration.k8s.io/sidecar-injector.sidecar-injector.pods';
/** The output applied last: what `status --from` judges with, as the reconciler judges with what the cluster has. */
let current = dist;

async function use(outdir: string): Promise<void> {
  await applyConfig(outdir);
  current = outdir;
}

/** The injector out of service: the webhook scaled to 0, or the pods' policy binding deleted (and no longer in force). */
async function injectorDown(): Promise<void> {
  if (WEBHOOK) {
    kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'scale', 'deploy/sidecar-injector', '--replicas=0']);
    await cluster.until('no injector pod', async () => (await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector')).length === 0, 120_000);
    return;
  }
  kubectl(cluster, ['delete', PODS_BINDING]);
  namespace('policy-probe', ENABLED);
  const probe = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe' }, spec: { containers: [app('app')] } };
  // The apiserver unloads a deleted binding asynchronously, as it loads one.
  await cluster.until('pods admitted without the policies', async () => !hasEnvoy(await cluster.plane.ok('POST', '/api/v1/namespaces/policy-probe/pods?dryRun=All', probe)), 120_000);
}

/** The injector back: the webhook's replicas Ready, or the output applied again and its policies in force. */
async function injectorBack(): Promise<void> {
  if (WEBHOOK) {
    kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'scale', 'deploy/sidecar-injector', '--replicas=2']);
    kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'rollout', 'status', 'deploy/sidecar-injector', '--timeout=180s']);
    // Ready pods are not yet a reachable webhook: the Service's rules follow the endpoints. Until a pod
    // is injected, the apiserver fails open, and a test's workload made then is one the reconciler must
    // restart for a missing sidecar (a run's "Envoy bump in place" found its pods restarted for that).
    namespace('webhook-probe', ENABLED);
    const probe = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe' }, spec: { containers: [app('app')] } };
    await cluster.until('pods injected again', async () => hasEnvoy(await cluster.plane.ok('POST', '/api/v1/namespaces/webhook-probe/pods?dryRun=All', probe)), 120_000);
    return;
  }
  await applyConfig(current);
}

/** A minimal wgpolicyk8s.io PolicyReport CRD (the reconciler writes reports only where it is installed). */
const POLICY_REPORT_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'policyreports.wgpolicyk8s.io' },
  spec: {
    group: 'wgpolicyk8s.io',
    names: { kind: 'PolicyReport', listKind: 'PolicyReportList', plural: 'policyreports', singular: 'policyreport', shortNames: ['polr'] },
    scope: 'Namespaced',
    versions: [{ name: 'v1alpha2', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};

describe(`the reconciler on a node (${BACKEND})`, { skip }, () => {
  test(WEBHOOK ? 'injector down: a Deployment of 3 runs bare; for 60 s nothing is restarted and an Event says why' : "the pods' policy not bound: a Deployment of 3 is admitted bare; for 60 s nothing is restarted", async () => {
    apply(POLICY_REPORT_CRD);
    await use(variant(ENVOY_FIRST, { reconciler: RECONCILER }));
    kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'rollout', 'status', 'deploy/sidecar-injector-reconciler', '--timeout=180s']);
    progress(`reconciler RBAC as synthesized:\n${kubectl(cluster, ['get', 'clusterrole', `${INJECTOR_NAMESPACE}.${LEASE}`, '-o', 'yaml'])}\n${kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'get', 'role', LEASE, '-o', 'yaml'])}`);
    await injectorDown();
    namespace('outage', ENABLED);
    apply({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web', namespace: 'outage' }, spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } } });
    deployment('outage', 'web', 3);
    const bare = await listPods(cluster, 'outage', 'app=web');
    assert.deepEqual(bare.map(hasEnvoy), [false, false, false], 'admitted bare (failurePolicy Ignore)');
    const before = replicaSets('outage', 'web');
    const watchedUntil = Date.now() + 60_000;
    await cluster.until('60 s with the injector down', async () => {
      assert.deepEqual(replicaSets('outage', 'web'), before, 'no restart while the injector is down');
      return Date.now() >= watchedUntil;
    }, 90_000);
    const waiting = eventsOf('outage').filter((event: any) => event.reason === 'WaitingForInjector');
    progress(`kubectl get events -n outage:\n${kubectl(cluster, ['-n', 'outage', 'get', 'events', '--field-selector', 'source=sidecar-injector-reconciler'])}`);
    if (WEBHOOK) {
      assert.equal(waiting.length, 1, 'one Event, not one per pass');
      assert.equal(waiting[0].involvedObject.kind, 'Deployment');
      assert.match(waiting[0].message, /envoy missing in 3 pods: waiting, not restarted while the webhook's Service sidecar-injector\/sidecar-injector has no ready endpoint/);
    } else {
      // Without the binding the policies apply nowhere: nothing is missing yet, and the reconciler's log says it cannot read the injector.
      assert.deepEqual(waiting, []);
      // The acting replica's log: `logs deploy/...` reads one pod of the two, and the standby only watches.
      const logs = kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'logs', actingReplica(), '--tail=200']);
      assert.match(logs, /MutatingAdmissionPolicyBinding sidecar-injector\.sidecar-injector\.pods is not in the cluster/, logs.slice(-2000));
    }
  });

  test('injector back: restarted exactly once, its new pods run envoy, status exits 0, never fewer Ready pods than the budget allows; an Event and the report say so', async () => {
    const before = replicaSets('outage', 'web');
    let fewestReady = Infinity;
    await injectorBack();
    await cluster.until('web restarted and running envoy', async () => {
      const pods = (await listPods(cluster, 'outage', 'app=web')).filter((pod) => !pod.metadata.deletionTimestamp);
      fewestReady = Math.min(fewestReady, pods.filter(isReady).length);
      return pods.length === 3 && pods.every((pod) => hasEnvoy(pod) && isReady(pod));
    }, 300_000);
    assert.equal(replicaSets('outage', 'web').length, before.length + 1, 'exactly one new ReplicaSet');
    assert.ok(fewestReady >= 2, `at least 2 Ready pods throughout (saw ${fewestReady})`);
    const status = await cli(cluster, ['status', '--from', current, '-n', 'outage']);
    shown('status -n outage', status);
    assert.equal(status.status, 0, describeRun(status));
    assert.equal(eventsOf('outage').filter((event: any) => event.reason === 'RestartedForSidecars').length, 1);
    await cluster.until("the outage namespace's report: web up to date", async () => {
      const report = getJson(['-n', 'outage', 'get', 'policyreports']).items[0];
      const web = report?.results?.find((result: any) => result.resources[0].name === 'web');
      return web?.properties?.upToDate === '3' && web?.properties?.missing === '0';
    }, 60_000);
  });

  test('a bare pod with no owner gets an Event and stays; an opted-out pod and a kube-system pod are untouched', async () => {
    await injectorDown();
    namespace('loners', ENABLED);
    const pod = (name: string, ns: string, annotations: Record<string, string> = {}) => apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, annotations }, spec: { containers: [app('app')] } });
    pod('lonely', 'loners');
    pod('opted-out', 'loners', { 'sidecar-injector.io/inject': 'false' });
    pod('system', 'kube-system');
    await injectorBack();
    await cluster.until('an Event on the bare pod', async () => eventsOf('loners').some((event: any) => event.involvedObject.name === 'lonely' && event.reason === 'NotRepaired'), 120_000);
    const uids = Object.fromEntries((await listPods(cluster, 'loners')).map((p) => [p.metadata.name, p.metadata.uid]));
    assert.deepEqual(Object.keys(uids).sort(), ['lonely', 'opted-out'], 'both still there');
    assert.ok(!eventsOf('loners').some((event: any) => event.involvedObject.name === 'opted-out'));
    assert.deepEqual(eventsOf('kube-system'), []);
  });

  test('an Envoy bump repaired in place: UIDs kept, the app containers not restarted, Events record it', async () => {
    namespace('bump', ENABLED);
    deployment('bump', 'web', 2);
    const before = await listPods(cluster, 'bump', 'app=web');
    assert.ok(before.length === 2 && before.every((p) => hasEnvoy(p)), 'the pods were injected before the bump');
    await use(variant(ENVOY_IN_PLACE, { reconciler: RECONCILER }));
    await cluster.until('envoy upgraded in place', async () => {
      const pods = await listPods(cluster, 'bump', 'app=web');
      return pods.length === 2 && pods.every((p) => p.status.containerStatuses?.find((c: any) => c.name === 'envoy')?.image?.endsWith(`envoy:v${ENVOY_IN_PLACE}`) && isReady(p));
    }, 300_000);
    const after = await listPods(cluster, 'bump', 'app=web');
    assert.deepEqual(after.map((p) => p.metadata.uid).sort(), before.map((p) => p.metadata.uid).sort());
    for (const p of after) assert.equal(p.status.containerStatuses.find((c: any) => c.name === 'app').restartCount, 0);
    // The reconciler records each pod's upgrade after the kubelet reports it: the Events may trail the pods.
    const upgraded = () => eventsOf('bump').filter((event: any) => event.reason === 'UpgradedSidecarsInPlace');
    await cluster.until('an UpgradedSidecarsInPlace Event per pod', async () => upgraded().length >= 2, 60_000);
    assert.equal(upgraded().length, 2, 'one Event per pod upgraded, no more');
  });

  test('the acting replica killed mid-repair: the other takes the Lease and finishes; no workload restarted twice', async () => {
    await injectorDown();
    namespace('handover', ENABLED);
    const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    for (const name of names) deployment('handover', name, 1);
    await injectorBack();
    await cluster.until('a first restart', () => names.some((name) => replicaSets('handover', name).length === 2), 180_000);
    const holder = actingReplica();
    progress(`killing the acting replica ${holder}`);
    kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'delete', 'pod', holder, '--grace-period=0', '--force']);
    await cluster.until('every workload restarted', () => names.every((name) => replicaSets('handover', name).length >= 2), 300_000);
    assert.notEqual(actingReplica(), holder);
    for (const name of names) assert.equal(replicaSets('handover', name).length, 2, `${name} restarted once`);
    // The point of a restart: the new pods carry their sidecar.
    await cluster.until('every handover pod running envoy', async () => {
      const pods = (await listPods(cluster, 'handover')).filter((pod) => !pod.metadata.deletionTimestamp);
      return pods.length === names.length && pods.every(hasEnvoy);
    }, 180_000).catch((error: Error) => {
      const bare = kubectl(cluster, ['-n', 'handover', 'get', 'pods', '-o', 'custom-columns=NAME:.metadata.name,CREATED:.metadata.creationTimestamp,CONTAINERS:.spec.containers[*].name']);
      const reconciler = kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'logs', actingReplica(), '--tail=60']);
      throw new Error(`${error.message}\n${bare}\nreconciler log:\n${reconciler}`);
    });
  });

  test('kubectl get events and the PolicyReport next to status -o json, judged against the same config', async () => {
    // status judges with the output applied last, which is what the reconciler reads from the cluster.
    // A report is written by a pass, so it trails the pods by up to one interval (docs/reconciler.md):
    // the two are compared once the pods have settled and a pass has followed.
    const compare = async () => {
      const status = await cli(cluster, ['status', '--from', current, '-A', '-o', 'json']);
      const reports = getJson(['get', 'policyreports', '-A']).items;
      const workloads = JSON.parse(status.stdout).workloads;
      const differences: string[] = [];
      for (const report of reports) {
        for (const result of report.results) {
          const where = `${report.metadata.namespace}/${result.resources[0].kind}/${result.resources[0].name}`;
          const line = workloads.find((w: any) => w.namespace === report.metadata.namespace && w.kind === result.resources[0].kind && w.name === result.resources[0].name);
          const fromStatus = line && { pods: line.pods, upToDate: line.upToDate, missing: line.missing, outdated: line.outdated };
          const fromReport = { pods: Number(result.properties.pods), upToDate: Number(result.properties.upToDate), missing: Number(result.properties.missing), outdated: Number(result.properties.outdated) };
          if (JSON.stringify(fromStatus) !== JSON.stringify(fromReport)) differences.push(`${where}: status ${JSON.stringify(fromStatus)}, report ${JSON.stringify(fromReport)}`);
        }
      }
      return { status, reports, differences };
    };
    let last = await compare();
    await cluster.until('the PolicyReports and status agree', async () => (last = await compare()).differences.length === 0, 60_000).catch((error: Error) => {
      throw new Error(`${error.message}:\n${last.differences.join('\n')}`);
    });
    progress(`kubectl get events -A (reconciler):\n${kubectl(cluster, ['get', 'events', '-A', '--field-selector', 'source=sidecar-injector-reconciler'])}`);
    progress(`status -o json:\n${last.status.stdout}`);
    progress(`policyreports:\n${JSON.stringify(last.reports.map((report: any) => ({ namespace: report.metadata.namespace, summary: report.summary, results: report.results.map((r: any) => ({ workload: `${r.resources[0].kind}/${r.resources[0].name}`, result: r.result, ...r.properties })) })), null, 2)}`);
    assert.ok(last.reports.some((report: any) => report.results.length > 0), 'reports with results were compared');
  });
});

describe(`an injection in audit mode on a node (${BACKEND})`, { skip }, () => {
  test('pods byte-identical to no injection; the warning, the metric and the report name what it would add', async () => {
    apply(POLICY_REPORT_CRD);
    await use(variant(ENVOY_FIRST, { reconciler: RECONCILER, audit: true }));
    namespace('audited', ENABLED);
    namespace('not-enabled');
    const pod = (ns: string) => JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe', namespace: ns, labels: { app: 'probe' } }, spec: { containers: [app('app')] } });
    const created = spawnSync('kubectl', ['--kubeconfig', cluster.kubeconfig, 'create', '-f', '-'], { input: pod('audited'), encoding: 'utf8' });
    assert.equal(created.status, 0, created.stderr);
    // The policies' ValidatingAdmissionPolicy warns in the webhook's words, after the apiserver's own preamble.
    assert.match(created.stderr, /Warning: (Validation failed for ValidatingAdmissionPolicy '[^']+' with binding '[^']+': )?audit: injection "envoy" would add containers envoy; .*it is in audit mode, so nothing was added/);
    kubectl(cluster, ['create', '-f', '-'], pod('not-enabled'));
    // The service-account token's projected volume gets a generated name per pod (kube-api-access-xxxxx):
    // the only difference two pods made from the same manifest have, so it is compared by its place.
    const tokenVolume = /^kube-api-access-[a-z0-9]{5}$/;
    const shape = (ns: string) => {
      const object = getJson(['-n', ns, 'get', 'pod', 'probe']);
      const spec = JSON.parse(JSON.stringify({ ...object.spec, nodeName: undefined }), (key, value) => (key === 'name' && typeof value === 'string' && tokenVolume.test(value) ? 'kube-api-access-(generated)' : value));
      return { annotations: object.metadata.annotations ?? {}, labels: object.metadata.labels, spec };
    };
    assert.deepEqual(shape('audited'), shape('not-enabled'), 'the audited pod is the pod as written, as in a namespace the injector does not serve');
    if (WEBHOOK) {
      // The apiserver sent the pod to one of the two replicas: their counts are summed, as a query would.
      let audited = 0;
      for (const webhookPod of await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector')) {
        const metrics = kubectl(cluster, ['get', '--raw', `/api/v1/namespaces/${INJECTOR_NAMESPACE}/pods/${webhookPod.metadata.name}:8081/proxy/metrics`]);
        const line = metrics.split('\n').find((candidate) => candidate.startsWith('sidecar_injector_pod_warnings_total{injection="envoy",reason="audit"} '));
        progress(`${webhookPod.metadata.name}: ${line ?? '(no audit warnings counted)'}`);
        audited += line ? Number(line.split(' ').pop()) : 0;
      }
      assert.ok(audited >= 1, `sidecar_injector_pod_warnings_total{injection="envoy",reason="audit"} summed over the replicas: ${audited}`);
    } else {
      // The apiserver's own count of the audit policy's warnings.
      const metrics = kubectl(cluster, ['get', '--raw', '/metrics']);
      const lines = metrics.split('\n').filter((line) => line.startsWith('apiserver_validating_admission_policy_check_total') && line.includes('enforcement_action="warn"'));
      progress(lines.join('\n'));
      assert.ok(lines.some((line) => /policy="[^"]*\.pods"/.test(line) && / [1-9]\d*$/.test(line)), 'the audit policy counted a warning');
    }
    await cluster.until('the audit namespace reported', async () => {
      const report = getJson(['get', 'policyreports', '-A']).items.find((item: any) => item.metadata.namespace === 'audited');
      return report?.results?.[0]?.properties?.audit === '1';
    }, 120_000);
  });
});
