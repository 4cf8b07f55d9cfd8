// The reconciler against an apiserver in memory that enforces its RBAC as synthesized: the outage
// scenario of issue 38 (bare pods wait while the injector is down, then one restart per workload), the
// pods it must never touch, the guards, the Lease, in-place repair, and reports equal to `status`.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyPods } from '../../webhook/fleet/injection-status';
import { injectorFromDocuments } from '../../webhook/fleet/synthesized-injectors';
import { statusReport } from '../../webhook/fleet/status-report';
import { repairedForAnnotation } from '../../webhook/config';
import { POLICY_REPORT_NAME } from '../../webhook/reconciler/policy-report';
import { MAX_REPAIR_CANDIDATES } from '../../webhook/reconciler/reconciler';
import { APP_SPEC, NAMESPACE, eventsIn, passAfter, reconcilerHarness, setWebhookReady, whileInjectorDown } from '../support/reconciler-harness';
import { ENVOY_V1, ENVOY_V2, envoyInjection, revisionedProps } from '../support/revision-fixtures';
import type { FakeKube } from '../support/fake-kube';

const containerNames = (pod: any) => pod.spec.containers.map((container: any) => container.name);
const podsOf = (kube: FakeKube, namespace: string, prefix: string) => kube.list('', 'pods', namespace).filter((pod) => pod.metadata.name.startsWith(prefix));
const writes = (kube: FakeKube, resource: string) => kube.requests.filter((request) => request.resource === resource && ['patch', 'update', 'delete'].includes(request.verb) && !request.dryRun);

describe('the reconciler after an injector outage (failurePolicy Ignore)', () => {
  test('waits while the injector is down, saying why in one Event; then restarts the Deployment exactly once', async () => {
    const { kube, clock, replica } = reconcilerHarness();
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    setWebhookReady(kube, false);
    kube.deployment('apps', 'web', 3, APP_SPEC);
    assert.deepEqual(podsOf(kube, 'apps', 'web').map(containerNames), [['app'], ['app'], ['app']], 'admitted bare while the injector is down');

    const { reconciler, lease } = replica('reconciler-a');
    assert.equal(await lease.tryAcquireOrRenew(), true);
    // 60 s with the injector still down: a pass every 30 s restarts nothing.
    for (let second = 0; second <= 60; second += 30) {
      const outcome = await reconciler.pass();
      assert.deepEqual(outcome.restarted, []);
      assert.match(outcome.injectorNotReady ?? '', /has no ready endpoint/);
      assert.deepEqual(outcome.waiting.map((entry) => entry.reason), ['injector-not-ready']);
      clock.advance(30_000);
      await lease.tryAcquireOrRenew();
    }
    assert.deepEqual(writes(kube, 'deployments'), [], 'no Deployment patched while the injector is down');
    const waiting = eventsIn(kube, 'apps').filter((event) => event.reason === 'WaitingForInjector');
    assert.equal(waiting.length, 1, 'one Event, not one per pass');
    assert.equal(waiting[0].object, 'Deployment/web');
    assert.equal(waiting[0].type, 'Warning');
    assert.match(waiting[0].message, /^envoy missing in 3 pods: waiting, not restarted while the webhook's Service sidecar-injector\/sidecar-injector has no ready endpoint/);
    const report = kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME);
    assert.deepEqual(report.summary, { pass: 0, fail: 3, warn: 0, error: 0, skip: 0 });

    setWebhookReady(kube, true);
    const back = await reconciler.pass();
    assert.deepEqual(back.restarted, ['apps/Deployment/web']);
    const deployment = kube.get('apps', 'deployments', 'apps', 'web');
    assert.match(deployment.spec.template.metadata.annotations[repairedForAnnotation('sidecar-injector.io')], /^[0-9a-f]{16}$/);
    assert.ok(deployment.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt']);
    const restarted = eventsIn(kube, 'apps').filter((event) => event.reason === 'RestartedForSidecars');
    assert.equal(restarted.length, 1);
    assert.match(restarted[0].message, /^restarted to add envoy \(envoy missing in 3 pods\)/);

    // Before the controller catches up, another pass does not stack a second restart on the first.
    const during = await passAfter(clock, lease, reconciler);
    assert.deepEqual(during.restarted, []);
    assert.deepEqual(during.waiting.map((entry) => entry.reason), ['rollout-in-progress']);

    kube.settle();
    assert.deepEqual(podsOf(kube, 'apps', 'web').map(containerNames), [['app', 'envoy'], ['app', 'envoy'], ['app', 'envoy']]);
    const after = await passAfter(clock, lease, reconciler);
    assert.deepEqual(after.restarted, []);
    assert.deepEqual(after.waiting, []);
    assert.equal(kube.rollouts.get('apps/web')!.length, 2, 'exactly one new ReplicaSet');
    assert.deepEqual(kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME).summary, { pass: 3, fail: 0, warn: 0, error: 0, skip: 0 });
    assert.deepEqual(kube.forbidden, [], 'every call within the synthesized RBAC');
  });

  test('a bare pod with no owner gets an Event and stays; an opted-out pod and a kube-system pod are untouched', async () => {
    const { kube, leader } = reconcilerHarness();
    whileInjectorDown(kube, () => {
      kube.admitPod({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'lonely', namespace: 'apps' }, spec: APP_SPEC });
      kube.admitPod({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'opted-out', namespace: 'apps', annotations: { 'sidecar-injector.io/inject': 'false' } }, spec: APP_SPEC });
      kube.admitPod({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'system', namespace: 'kube-system' }, spec: APP_SPEC });
      kube.deployment('kube-system', 'dns', 2, APP_SPEC);
    });
    const { reconciler } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    assert.deepEqual(outcome.restarted, []);
    const events = eventsIn(kube, 'apps');
    assert.equal(events.length, 1);
    assert.equal(events[0].object, 'Pod/lonely');
    assert.equal(events[0].reason, 'NotRepaired');
    assert.match(events[0].message, /a pod with no owner is never deleted/);
    assert.deepEqual(eventsIn(kube, 'kube-system'), []);
    assert.deepEqual([...writes(kube, 'pods'), ...writes(kube, 'deployments')], []);
    assert.ok(kube.get('', 'pods', 'apps', 'lonely'), 'still there');
    assert.equal(kube.requests.filter((request) => request.namespace === 'kube-system').length, 0, 'kube-system is never read namespace by namespace, nor written');
    assert.deepEqual(kube.forbidden, []);
  });

  test('reports equal to status: the PolicyReport of each namespace counts what statusReport counts for its pods', async () => {
    const { kube, manifests, leader } = reconcilerHarness({ missing: 'report' });
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    kube.deployment('apps', 'injected', 2, APP_SPEC);
    whileInjectorDown(kube, () => {
      kube.deployment('apps', 'bare', 3, APP_SPEC);
      kube.admitPod({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'lonely', namespace: 'apps' }, spec: APP_SPEC });
    });
    const { reconciler } = await leader('reconciler-a');
    await reconciler.pass();
    const source = injectorFromDocuments('test', manifests.map((object, index) => ({ object, source: 'test', index: index + 1, line: 1 })));
    const labels = new Map(kube.list('', 'namespaces').map((ns) => [ns.metadata.name, ns.metadata.labels]));
    const status = statusReport(classifyPods({ pods: kube.list('', 'pods', 'apps'), namespaceLabels: labels, owners: new Map() }, source), source.config);
    const report = kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME);
    assert.deepEqual(
      report.results.map((result: any) => ({ kind: result.resources[0].kind, name: result.resources[0].name, result: result.result, ...result.properties })),
      status.workloads.map((workload) => ({
        kind: workload.kind,
        name: workload.name,
        result: workload.missing > 0 ? 'fail' : 'pass',
        pods: String(workload.pods),
        upToDate: String(workload.upToDate),
        outdated: String(workload.outdated),
        missing: String(workload.missing),
        noLongerConfigured: String(workload.noLongerConfigured),
        versionUnknown: String(workload.versionUnknown),
      })),
    );
    assert.deepEqual(report.summary, { pass: status.summary.upToDate, fail: status.summary.missing, warn: 0, error: 0, skip: 0 });
    assert.deepEqual(report.summary, { pass: 2, fail: 4, warn: 0, error: 0, skip: 0 });
    // Report only: nothing restarted, and the RBAC as synthesized cannot patch a workload.
    assert.deepEqual(writes(kube, 'deployments'), []);
    const clusterRole = manifests.find((object) => object.kind === 'ClusterRole' && object.metadata.name.endsWith('-reconciler'))!;
    assert.ok(!clusterRole.rules.some((rule: any) => rule.verbs.includes('patch')), 'a report-only reconciler has no patch verb');
    assert.deepEqual(kube.forbidden, []);
  });
});

describe('the reconciler\'s guards', () => {
  test('a PodDisruptionBudget that allows no disruption now holds the restart back, with an Event', async () => {
    const { kube, leader } = reconcilerHarness();
    whileInjectorDown(kube, () => {
      kube.deployment('apps', 'web', 3, APP_SPEC);
      kube.put('policy', 'poddisruptionbudgets', { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web', namespace: 'apps' }, spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } }, status: { disruptionsAllowed: 0 } });
    });
    const { reconciler } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    assert.deepEqual(outcome.restarted, []);
    assert.deepEqual(outcome.waiting.map((entry) => entry.reason), ['disruption-budget']);
    assert.match(eventsIn(kube, 'apps')[0].message, /PodDisruptionBudget web allows no disruption now/);
    // The budget allows one again: the Deployment's own strategy (25% of 3 = 0 down at once) keeps it.
    kube.get('policy', 'poddisruptionbudgets', 'apps', 'web').status.disruptionsAllowed = 1;
    assert.deepEqual((await reconciler.pass()).restarted, ['apps/Deployment/web']);
  });

  test('a rollout strategy that takes down more pods than the budget allows is never restarted by the reconciler', async () => {
    const { kube, leader } = reconcilerHarness();
    whileInjectorDown(kube, () => {
      kube.deployment('apps', 'web', 4, APP_SPEC, { strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '50%', maxSurge: 0 } } });
      kube.put('policy', 'poddisruptionbudgets', { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web', namespace: 'apps' }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } }, status: { disruptionsAllowed: 1 } });
    });
    const { reconciler } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    assert.deepEqual(outcome.restarted, []);
    assert.match(outcome.waiting[0].message, /takes down up to 2 of 4 pods at once, more than PodDisruptionBudget web allows \(1\)/);
  });

  test('the dry-run probe: endpoints ready but the injector not injecting means no restart', async () => {
    const { kube, leader } = reconcilerHarness();
    whileInjectorDown(kube, () => {
      kube.deployment('apps', 'web', 2, APP_SPEC);
      // Endpoints say ready, yet admission does not inject (a broken config, a network policy in the way).
    });
    kube.injectorUp = false;
    const { reconciler } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    assert.deepEqual(outcome.restarted, []);
    assert.match(outcome.waiting[0].message, /a dry-run create of its pod came back without envoy as configured now: the injector is not injecting it/);
    const probes = kube.requests.filter((request) => request.resource === 'pods' && request.verb === 'create');
    assert.ok(probes.length > 0 && probes.every((request) => request.dryRun), 'the probe is a dry run, never a stored pod');
  });

  test('at most repairsPerMinute restarts a minute; the rest wait for the next pass', async () => {
    const { kube, clock, leader } = reconcilerHarness({ repairsPerMinute: 2 });
    setWebhookReady(kube, false);
    for (const name of ['a', 'b', 'c', 'd']) kube.deployment('apps', name, 1, APP_SPEC);
    setWebhookReady(kube, true);
    const { reconciler, lease } = await leader('reconciler-a');
    const first = await reconciler.pass();
    assert.equal(first.restarted.length, 2);
    assert.deepEqual(first.waiting.map((entry) => entry.reason), ['rate-limit', 'rate-limit']);
    kube.settle();
    clock.advance(60_000);
    await lease.tryAcquireOrRenew();
    const second = await reconciler.pass();
    assert.equal(second.restarted.length, 2);
    kube.settle();
    for (const name of ['a', 'b', 'c', 'd']) assert.equal(kube.rollouts.get(`apps/${name}`)!.length, 2, `${name} restarted once`);
  });

  test("a restarted workload's old pod still stopping (deletionTimestamp) after the rollout is done: not counted, not 'still not right'", async () => {
    const { kube, clock, leader, manifests } = reconcilerHarness();
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    whileInjectorDown(kube, () => {
      kube.deployment('apps', 'web', 1, APP_SPEC);
    });
    const [bare] = podsOf(kube, 'apps', 'web');
    const { reconciler, lease } = await leader('reconciler-a');
    assert.deepEqual((await reconciler.pass()).restarted, ['apps/Deployment/web']);
    kube.settle();
    // The Deployment's rollout is done, but the kubelet has not yet confirmed the old pod's end: the
    // apiserver still lists it, with a deletionTimestamp (seen on a node, issue 46).
    kube.put('', 'pods', { ...structuredClone(bare), metadata: { ...structuredClone(bare.metadata), deletionTimestamp: new Date(clock.now()).toISOString() } });
    assert.deepEqual(podsOf(kube, 'apps', 'web').map(containerNames).sort(), [['app'], ['app', 'envoy']]);
    const after = await passAfter(clock, lease, reconciler);
    assert.deepEqual(after.restarted, []);
    assert.deepEqual(after.waiting, [], 'nothing waits: the stopping pod is not a repair that failed');
    assert.deepEqual(eventsIn(kube, 'apps').filter((event) => event.reason === 'NotRepaired'), []);
    assert.deepEqual(kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME).summary, { pass: 1, fail: 0, warn: 0, error: 0, skip: 0 });
    // status counts the same pods as the report.
    const source = injectorFromDocuments('test', manifests.map((object, index) => ({ object, source: 'test', index: index + 1, line: 1 })));
    const labels = new Map(kube.list('', 'namespaces').map((ns) => [ns.metadata.name, ns.metadata.labels]));
    const status = statusReport(classifyPods({ pods: kube.list('', 'pods', 'apps'), namespaceLabels: labels, owners: new Map() }, source), source.config);
    assert.deepEqual([status.summary.pods, status.summary.upToDate, status.summary.missing], [1, 1, 0]);
  });

  test('a workload restarted once for this config whose pods still miss a sidecar is not restarted again', async () => {
    const { kube, clock, leader } = reconcilerHarness();
    whileInjectorDown(kube, () => {
      kube.deployment('apps', 'web', 2, APP_SPEC);
    });
    const { reconciler, lease } = await leader('reconciler-a');
    assert.deepEqual((await reconciler.pass()).restarted, ['apps/Deployment/web']);
    // The new pods come up bare anyway (the injector fails again between the probe and the pods).
    kube.injectorUp = false;
    kube.settle();
    kube.injectorUp = true;
    const again = await passAfter(clock, lease, reconciler);
    assert.deepEqual(again.restarted, []);
    assert.deepEqual(again.waiting.map((entry) => entry.reason), ['restarted-already']);
    assert.match(eventsIn(kube, 'apps').find((event) => event.reason === 'NotRepaired')!.message, /restarted once for this config already/);
    assert.equal(kube.rollouts.get('apps/web')!.length, 2);
  });
});

describe('one replica acts at a time', () => {
  test('the acting replica stops renewing mid-repair: the other takes the Lease after its duration and finishes; nothing is restarted twice', async () => {
    const { kube, clock, replica } = reconcilerHarness({ repairsPerMinute: 1 });
    whileInjectorDown(kube, () => {
      kube.deployment('apps', 'one', 2, APP_SPEC);
      kube.deployment('apps', 'two', 2, APP_SPEC);
    });
    const a = replica('reconciler-a');
    const b = replica('reconciler-b');
    assert.equal(await a.lease.tryAcquireOrRenew(), true);
    assert.equal(await b.lease.tryAcquireOrRenew(), false);
    assert.equal((await b.reconciler.pass()).leader, false, 'the other replica only watches');
    const first = await a.reconciler.pass();
    assert.deepEqual(first.restarted, ['apps/Deployment/one']);
    // Replica a is killed here: no more renewals. b waits out the Lease's duration by its own clock.
    clock.advance(5_000);
    assert.equal(await b.lease.tryAcquireOrRenew(), false);
    clock.advance(15_000);
    assert.equal(await b.lease.tryAcquireOrRenew(), true);
    assert.equal(a.lease.held(), false, 'a, were it alive, would know it no longer holds the Lease');
    const second = await b.reconciler.pass();
    assert.deepEqual(second.restarted, ['apps/Deployment/two']);
    assert.deepEqual(second.waiting.map((entry) => entry.reason), ['rollout-in-progress'], 'one: its controller has not caught up; not restarted again');
    kube.settle();
    clock.advance(30_000);
    await b.lease.tryAcquireOrRenew();
    const third = await b.reconciler.pass();
    assert.deepEqual(third.restarted, []);
    assert.equal(kube.rollouts.get('apps/one')!.length, 2);
    assert.equal(kube.rollouts.get('apps/two')!.length, 2);
    const lease = kube.get('coordination.k8s.io', 'leases', NAMESPACE, 'sidecar-injector-reconciler');
    assert.equal(lease.spec.holderIdentity, 'reconciler-b');
    assert.equal(lease.spec.leaseTransitions, 1);
  });
});

describe('in-place repair (outdated: in-place)', () => {
  test('an Envoy bump: pods keep their UIDs, the app container does not restart, an Event records each pod', async () => {
    const { kube, clock, apply, leader } = reconcilerHarness({ outdated: 'in-place' });
    kube.deployment('apps', 'web', 3, APP_SPEC);
    const before = podsOf(kube, 'apps', 'web').map((pod) => ({ name: pod.metadata.name, uid: pod.metadata.uid }));
    apply({ injections: [envoyInjection(ENVOY_V2)] });
    const { reconciler, lease } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    assert.equal(outcome.upgraded.length, 3);
    assert.deepEqual(outcome.restarted, []);
    const after = podsOf(kube, 'apps', 'web');
    assert.deepEqual(after.map((pod) => ({ name: pod.metadata.name, uid: pod.metadata.uid })), before, 'the same pods');
    for (const pod of after) {
      assert.equal(pod.spec.containers.find((c: any) => c.name === 'envoy').image, ENVOY_V2);
      assert.equal(pod.status.containerStatuses.find((c: any) => c.name === 'app').restartCount, 0, 'the app did not restart');
      assert.equal(pod.status.containerStatuses.find((c: any) => c.name === 'envoy').restartCount, 1);
    }
    const events = eventsIn(kube, 'apps').filter((event) => event.reason === 'UpgradedSidecarsInPlace');
    assert.equal(events.length, 3);
    assert.match(events[0].message, /^upgraded in place pod apps\/web-.*: envoy restartCount 0 -> 1, imageID sha256:.* -> sha256:.*; no other container restarted$/);
    assert.equal(kube.rollouts.get('apps/web')!.length, 1, 'no restart');
    const again = await passAfter(clock, lease, reconciler);
    assert.deepEqual([again.upgraded.length, again.restarted.length, again.waiting.length], [0, 0, 0]);
    assert.deepEqual(kube.forbidden, []);
    void ENVOY_V1;
  });
});

describe('the reconciler in place, with a readiness gate', () => {
  test('its pods/status writes pass its fence as its image patches do: the gate False before each image, True after', async () => {
    const gated = (image: string) => ({ ...envoyInjection(image), readinessGate: true });
    const { kube, apply, leader } = reconcilerHarness({ outdated: 'in-place' }, { injections: [gated(ENVOY_V1)] });
    kube.deployment('apps', 'web', 2, APP_SPEC);
    apply({ injections: [gated(ENVOY_V2)] });
    const { reconciler } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    assert.equal(outcome.upgraded.length, 2);
    const statusWrites = kube.requests.filter((request) => request.resource === 'pods/status').map((request) => (request.body as any).status.conditions[0]);
    assert.deepEqual(statusWrites.map((condition) => `${condition.type}=${condition.status}`), ['False', 'True', 'False', 'True'].map((status) => `sidecar-injector.io/sidecars-ready=${status}`));
    assert.deepEqual(kube.forbidden, [], 'every write within its RBAC and its fence');
  });
});

describe('the reconciler with the policy backend', () => {
  test('waits while a policy is not loaded, saying which; repairs once they all are', async () => {
    const { kube, apply, settings, leader } = reconcilerHarness({}, { backend: 'admissionPolicy' });
    assert.equal(settings.injector.backend, 'policy');
    const policies = kube.list('admissionregistration.k8s.io', 'mutatingadmissionpolicies');
    assert.ok(policies.length > 0);
    // The policies are not in the cluster yet (a GitOps sync half done): pods are admitted bare.
    for (const policy of policies) kube.remove('admissionregistration.k8s.io', 'mutatingadmissionpolicies', undefined, policy.metadata.name);
    kube.injectorUp = false;
    kube.deployment('apps', 'web', 2, APP_SPEC);
    const { reconciler } = await leader('reconciler-a');
    const waiting = await reconciler.pass();
    assert.match(waiting.injectorUnreadable ?? '', /^MutatingAdmissionPolicy sidecar-injector\.sidecar-injector\.\w+ is not in the cluster$/);
    assert.deepEqual(waiting.restarted, []);
    apply({});
    kube.injectorUp = true;
    const repaired = await reconciler.pass();
    assert.deepEqual(repaired.restarted, ['apps/Deployment/web']);
    kube.settle();
    assert.deepEqual(podsOf(kube, 'apps', 'web').map(containerNames), [['app', 'envoy'], ['app', 'envoy']]);
    assert.deepEqual(kube.forbidden, [], 'no ConfigMap, no EndpointSlice: the policy backend\'s RBAC is enough');
  });
});

describe('PolicyReports are written when they change', () => {
  test('a pass that finds the same writes nothing; a namespace with nothing to report gets no report', async () => {
    const { kube, clock, leader } = reconcilerHarness({ missing: 'report' });
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    setWebhookReady(kube, false);
    kube.deployment('apps', 'web', 2, APP_SPEC);
    kube.deployment('plain', 'other', 2, APP_SPEC); // not an enabled namespace: owes nothing
    const { reconciler, lease } = await leader('reconciler-a');
    assert.equal((await reconciler.pass()).reports, 1);
    assert.equal(kube.get('wgpolicyk8s.io', 'policyreports', 'plain', POLICY_REPORT_NAME), undefined);
    const reportWrites = () => kube.requests.filter((request) => request.resource === 'policyreports' && ['create', 'update'].includes(request.verb)).length;
    const before = reportWrites();
    assert.equal((await passAfter(clock, lease, reconciler)).reports, 0);
    assert.equal(reportWrites(), before, 'nothing new: no write');
    setWebhookReady(kube, true);
    kube.deployment('apps', 'late', 1, APP_SPEC);
    assert.equal((await passAfter(clock, lease, reconciler)).reports, 1);
    const results = kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME).results;
    assert.deepEqual(results.map((result: any) => [result.resources[0].name, result.result]), [['late', 'pass'], ['web', 'fail']]);
  });
});

describe('PolicyReports of namespaces left without pods', () => {
  test('are emptied on the next pass (not deleted: it may not), then left alone; a namespace never reported gets none', async () => {
    const { kube, clock, replica, leader } = reconcilerHarness({ missing: 'report' });
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    setWebhookReady(kube, false);
    kube.deployment('apps', 'web', 2, APP_SPEC);
    kube.namespace('team-b', { injection: 'enabled' });
    kube.deployment('team-b', 'api', 1, APP_SPEC);
    kube.put('wgpolicyk8s.io', 'policyreports', { apiVersion: 'wgpolicyk8s.io/v1alpha2', kind: 'PolicyReport', metadata: { name: 'someone-else', namespace: 'gone', labels: { 'app.kubernetes.io/managed-by': 'sidecar-injector-reconciler' } }, results: [{ result: 'fail' }] });
    const { reconciler, lease } = await leader('reconciler-a');
    assert.equal((await reconciler.pass()).reports, 2);
    assert.equal(kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME).summary.fail, 2);
    for (const pod of podsOf(kube, 'apps', 'web')) kube.remove('', 'pods', 'apps', pod.metadata.name);
    kube.remove('apps', 'deployments', 'apps', 'web');
    assert.equal((await passAfter(clock, lease, reconciler)).reports, 1, 'only the vacated namespace is written');
    const emptied = kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME);
    assert.deepEqual([emptied.results, emptied.summary], [[], { pass: 0, fail: 0, warn: 0, error: 0, skip: 0 }]);
    assert.equal(kube.get('wgpolicyk8s.io', 'policyreports', 'team-b', POLICY_REPORT_NAME).summary.fail, 1, 'a namespace with pods keeps its findings');
    assert.deepEqual(kube.get('wgpolicyk8s.io', 'policyreports', 'gone', 'someone-else').results, [{ result: 'fail' }], 'only reports of its own name');
    assert.equal((await passAfter(clock, lease, reconciler)).reports, 0, 'emptied once');
    // A new leader, that remembers nothing, reads the empty report back and writes nothing.
    const other = replica('reconciler-b');
    clock.advance(30_000);
    await other.lease.tryAcquireOrRenew();
    assert.equal((await other.reconciler.pass()).reports, 0);
    assert.deepEqual(kube.forbidden, [], 'the list of its reports is within its ClusterRole');
  });
});

describe('PolicyReports that cannot be listed', () => {
  test('(a ClusterRole from before the emptying, say): logged, and the pass still repairs', async () => {
    const { kube, logs, leader } = reconcilerHarness();
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    kube.rbac = { ...kube.rbac!, cluster: kube.rbac!.cluster.map((rule: any) => (rule.resources.includes('policyreports') ? { ...rule, verbs: rule.verbs.filter((verb: string) => verb !== 'list') } : rule)) };
    whileInjectorDown(kube, () => {
      kube.deployment('apps', 'web', 2, APP_SPEC);
    });
    const { reconciler } = await leader('reconciler-a');
    assert.deepEqual((await reconciler.pass()).restarted, ['apps/Deployment/web']);
    assert.ok(logs.some((entry) => entry.level === 'warn' && /could not list the PolicyReports/.test(entry.message)), JSON.stringify(logs));
  });
});

describe('a namespace being deleted', () => {
  test('its report cannot be written: logged, and the pass goes on to report and repair the others', async () => {
    const { kube, logs, leader } = reconcilerHarness();
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    kube.namespace('leaving', { injection: 'enabled' });
    whileInjectorDown(kube, () => {
      kube.deployment('leaving', 'old', 1, APP_SPEC);
      kube.deployment('apps', 'web', 2, APP_SPEC);
    });
    kube.terminating.add('leaving');
    const { reconciler } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    assert.deepEqual(outcome.restarted, ['apps/Deployment/web'], 'in the namespace being deleted the dry-run probe is refused too, so nothing is restarted there');
    assert.ok(kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME), 'the other namespace is reported');
    assert.equal(kube.get('wgpolicyk8s.io', 'policyreports', 'leaving', POLICY_REPORT_NAME), undefined);
    assert.ok(logs.some((entry) => entry.level === 'warn' && /PolicyReport/.test(entry.message) && entry.fields?.namespace === 'leaving'), JSON.stringify(logs));
  });
});

describe('workloads of kinds the reconciler does not know', () => {
  test('Events and report results name them with the apiVersion of their owner reference, not a guess', async () => {
    const { kube, leader } = reconcilerHarness({ missing: 'restart' });
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    setWebhookReady(kube, false);
    const owner = { apiVersion: 'apps.kruise.io/v1alpha1', kind: 'CloneSet', name: 'web', uid: 'c1', controller: true };
    kube.admitPod({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-x7k2p', namespace: 'apps', ownerReferences: [owner] }, spec: APP_SPEC });
    setWebhookReady(kube, true);
    const { reconciler } = await leader('reconciler-a');
    assert.deepEqual((await reconciler.pass()).restarted, [], 'not a kind it restarts');
    const events = kube.list('', 'events', 'apps');
    assert.ok(events.length > 0);
    for (const event of events) assert.deepEqual([event.involvedObject.apiVersion, event.involvedObject.kind, event.involvedObject.name], ['apps.kruise.io/v1alpha1', 'CloneSet', 'web'], event.message);
    const [result] = kube.get('wgpolicyk8s.io', 'policyreports', 'apps', POLICY_REPORT_NAME).results;
    assert.deepEqual(result.resources, [{ apiVersion: 'apps.kruise.io/v1alpha1', kind: 'CloneSet', name: 'web', namespace: 'apps' }]);
  });
});

describe('repairs come after the list', () => {
  test('no workload is read or changed before the last page of pods is in; past MAX_REPAIR_CANDIDATES the rest wait for the next pass', async () => {
    const { kube, leader } = reconcilerHarness({ repairsPerMinute: 60 });
    setWebhookReady(kube, false);
    const names = Array.from({ length: MAX_REPAIR_CANDIDATES + 3 }, (_, index) => `w${String(index).padStart(3, '0')}`);
    for (const name of names) kube.deployment('apps', name, 1, APP_SPEC);
    setWebhookReady(kube, true);
    const { reconciler } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    const lastPodPage = kube.requests.map((request, index) => ({ request, index })).filter(({ request }) => request.resource === 'pods' && request.verb === 'list' && request.namespace === undefined).pop()!.index;
    const firstWorkloadRead = kube.requests.findIndex((request) => request.resource === 'deployments');
    assert.ok(firstWorkloadRead > lastPodPage, `the first Deployment read (request ${firstWorkloadRead}) comes after the last pod page (request ${lastPodPage})`);
    assert.equal(outcome.restarted.length, 60, 'as many as the rate allows');
    assert.equal(outcome.waiting.filter((entry) => /more than 64 workloads to repair/.test(entry.message)).length, 3);
  });

  test('in place, a change beyond images restarts the workload instead, once', async () => {
    const { kube, clock, apply, leader } = reconcilerHarness({ outdated: 'in-place' });
    kube.deployment('apps', 'web', 2, APP_SPEC);
    const changed = envoyInjection(ENVOY_V2);
    apply({ injections: [{ ...changed, containers: [{ ...changed.containers![0], env: [{ name: 'LOG_LEVEL', value: 'debug' }] }] }] });
    const { reconciler, lease } = await leader('reconciler-a');
    const outcome = await reconciler.pass();
    assert.deepEqual([outcome.upgraded.length, outcome.restarted], [0, ['apps/Deployment/web']]);
    kube.settle();
    assert.deepEqual((await passAfter(clock, lease, reconciler)).restarted, []);
    assert.equal(kube.rollouts.get('apps/web')!.length, 2);
    assert.deepEqual(podsOf(kube, 'apps', 'web').map((pod) => pod.spec.containers[1].env), [[{ name: 'LOG_LEVEL', value: 'debug' }], [{ name: 'LOG_LEVEL', value: 'debug' }]]);
  });
});

describe('the reconciler with revisions', () => {
  test('a bare Deployment in a canary namespace is restarted onto r2, the one its tag names, and the probe asks for r2\'s hash', async () => {
    const props = revisionedProps('r1');
    const { kube, clock, leader } = reconcilerHarness({}, { revisions: props.revisions, tags: props.tags, injections: undefined });
    kube.namespace('canary-apps', { injection: 'enabled', 'sidecar-injector.io/rev': 'canary' });
    whileInjectorDown(kube, () => {
      kube.deployment('canary-apps', 'web', 2, APP_SPEC);
    });
    const { reconciler, lease } = await leader('reconciler-a');
    assert.deepEqual((await reconciler.pass()).restarted, ['canary-apps/Deployment/web']);
    kube.settle();
    for (const pod of podsOf(kube, 'canary-apps', 'web')) {
      assert.equal(pod.spec.containers.find((c: any) => c.name === 'envoy').image, ENVOY_V2);
      assert.equal(pod.metadata.annotations['sidecar-injector.io/revision'], 'r2');
    }
    const again = await passAfter(clock, lease, reconciler);
    assert.deepEqual([again.restarted, again.waiting], [[], []]);
    assert.deepEqual(kube.forbidden, []);
  });
});
