// A pass lists the pods of the namespaces where they changed (a metadata-only watch of pods from the
// last full list), where the namespace's labels or annotations changed, and where the last judgement
// left work; every pod when the watch is not whole, the injector changed, every 10 minutes, or past
// MAX_CHANGED_NAMESPACES. What it finds is what a full list would find: the scenarios of
// reconciler.test.ts run with the watch too.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FULL_PASS_EVERY_MS, MAX_CHANGED_NAMESPACES, PodChanges } from '../../webhook/reconciler/pod-changes';
import type { KubeApi, WatchEvent } from '../../webhook/kube-client/kube-api';
import { POLICY_REPORT_NAME } from '../../webhook/reconciler/policy-report';
import { APP_SPEC, TestClock, passAfter, reconcilerHarness, setWebhookReady, whileInjectorDown } from '../support/reconciler-harness';
import type { FakeKube } from '../support/fake-kube';

/** The pod lists a pass asked for: `*` for every pod, else the namespace. */
function podLists(kube: FakeKube, from: number): string[] {
  return kube.requests.slice(from).filter((request) => request.resource === 'pods' && request.verb === 'list').map((request) => request.namespace ?? '*');
}

async function settledHarness() {
  const harness = reconcilerHarness();
  const { kube } = harness;
  kube.served.add('wgpolicyk8s.io/v1alpha2');
  kube.namespace('team-b', { injection: 'enabled' });
  kube.deployment('apps', 'web', 2, APP_SPEC);
  kube.deployment('team-b', 'api', 2, APP_SPEC);
  kube.deployment('plain', 'other', 1, APP_SPEC);
  const { reconciler, lease } = harness.replica('reconciler-a');
  const pass = async () => {
    harness.clock.advance(30_000);
    await lease.tryAcquireOrRenew();
    const from = kube.requests.length;
    const outcome = await reconciler.pass();
    return { outcome, lists: [...new Set(podLists(kube, from))] };
  };
  const first = await pass();
  assert.equal(first.outcome.listed, 'all');
  assert.equal(kube.podWatches, 1, 'the watch runs from the full list');
  return { ...harness, reconciler, lease, pass };
}

describe('where pods changed', () => {
  test('nothing changed: no pod is listed; a bare Deployment in one namespace: that namespace is listed and repaired', async () => {
    const { kube, pass, logs } = await settledHarness();
    const quiet = await pass();
    assert.deepEqual([quiet.outcome.listed, quiet.lists], [0, []]);
    whileInjectorDown(kube, () => {
      kube.deployment('team-b', 'late', 2, APP_SPEC);
    });
    const found = await pass();
    assert.deepEqual([found.outcome.listed, found.lists], [1, ['team-b']]);
    assert.deepEqual(found.outcome.restarted, ['team-b/Deployment/late']);
    assert.equal(kube.get('wgpolicyk8s.io', 'policyreports', 'team-b', POLICY_REPORT_NAME).summary.fail, 2, 'its report as a full pass writes it');
    kube.settle();
    // The restart's new pods change team-b again; once they are right it settles.
    const after = await pass();
    assert.deepEqual(after.lists, ['team-b']);
    assert.deepEqual(after.outcome.restarted, []);
    assert.equal(kube.get('wgpolicyk8s.io', 'policyreports', 'team-b', POLICY_REPORT_NAME).summary.fail, 0);
    assert.deepEqual((await pass()).lists, []);
    assert.deepEqual(kube.forbidden, [], 'the watch is within its ClusterRole');
    assert.ok(!logs.some((entry) => entry.level !== 'info'), JSON.stringify(logs.filter((entry) => entry.level !== 'info')));
  });

  test('a namespace whose labels change is judged again: enabled now, its bare pods are repaired', async () => {
    const { kube, pass } = await settledHarness();
    kube.namespace('plain', { injection: 'enabled' });
    const relabelled = await pass();
    assert.deepEqual(relabelled.lists, ['plain']);
    assert.deepEqual(relabelled.outcome.restarted, ['plain/Deployment/other']);
  });

  test('a namespace with work left is listed every pass until it is done, changed or not', async () => {
    const { kube, pass } = await settledHarness();
    setWebhookReady(kube, false);
    kube.deployment('apps', 'bare', 1, APP_SPEC);
    const waiting = await pass();
    assert.deepEqual([waiting.lists, waiting.outcome.waiting.map((entry) => entry.reason)], [['apps'], ['injector-not-ready']]);
    const still = await pass();
    assert.deepEqual([still.lists, still.outcome.waiting.map((entry) => entry.reason)], [['apps'], ['injector-not-ready']], 'no pod changed, yet it is listed: it waits');
    setWebhookReady(kube, true);
    assert.deepEqual((await pass()).outcome.restarted, ['apps/Deployment/bare']);
  });

  test('every pod is listed again when the injector changes, when the watch is gone or fails, and every 10 minutes', async () => {
    const { kube, clock, pass, apply, logs } = await settledHarness();
    // Anything of the injector (here its webhook configuration) changes how every pod is judged.
    apply({ failurePolicy: 'Fail' });
    assert.equal((await pass()).outcome.listed, 'all');
    assert.equal((await pass()).outcome.listed, 0);
    kube.endWatches('gone');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await pass()).outcome.listed, 'all');
    assert.equal(kube.podWatches, 1, 'watching again from the new list');
    kube.endWatches(new Error('connection reset'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await pass()).outcome.listed, 'all');
    assert.ok(logs.some((entry) => entry.level === 'warn' && /the pod watch failed/.test(entry.message)));
    assert.equal((await pass()).outcome.listed, 0);
    clock.advance(FULL_PASS_EVERY_MS);
    assert.equal((await pass()).outcome.listed, 'all');
  });

  test('the PolicyReport CRD installed: every pod is listed, so every namespace gets its report at once', async () => {
    const harness = reconcilerHarness({ missing: 'report' });
    const { kube, clock } = harness;
    kube.deployment('apps', 'web', 1, APP_SPEC); // injected: nothing left to do there, so only a full pass lists it
    const { reconciler, lease } = harness.replica('reconciler-a');
    await lease.tryAcquireOrRenew();
    assert.equal((await reconciler.pass()).reports, 0, 'not served yet');
    kube.served.add('wgpolicyk8s.io/v1alpha2');
    const outcome = await passAfter(clock, lease, reconciler);
    assert.deepEqual([outcome.listed, outcome.reports], ['all', 1]);
  });

  test('without a watch, or without the Lease, every pass lists every pod', async () => {
    const harness = reconcilerHarness();
    harness.kube.watch = undefined;
    harness.kube.deployment('apps', 'web', 1, APP_SPEC);
    const { reconciler, lease } = harness.replica('reconciler-a');
    for (let index = 0; index < 3; index++) {
      harness.clock.advance(30_000);
      await lease.tryAcquireOrRenew();
      assert.equal((await reconciler.pass()).listed, 'all');
    }
  });

  test('the Lease lost: the watch stops, and the next leader pass lists every pod', async () => {
    const { kube, reconciler, lease, pass } = await settledHarness();
    await lease.release();
    assert.equal((await reconciler.pass()).leader, false);
    assert.equal(kube.podWatches, 0);
    assert.equal((await pass()).outcome.listed, 'all', 'leader again');
  });
});

describe('PodChanges', () => {
  test(`more than ${MAX_CHANGED_NAMESPACES} changed namespaces: the next pass lists every pod, and the names are not kept`, async () => {
    let emit: ((event: WatchEvent) => void) | undefined;
    const api: KubeApi = {
      request: async () => ({}),
      watch: (_path, _query, onEvent, signal) => {
        emit = onEvent;
        return new Promise((resolve) => signal.addEventListener('abort', () => resolve('ended')));
      },
    };
    const changes = new PodChanges(api, new TestClock(), () => undefined);
    changes.synced('100');
    await new Promise((resolve) => setImmediate(resolve));
    for (let index = 0; index < MAX_CHANGED_NAMESPACES; index++) emit!({ type: 'MODIFIED', object: { metadata: { namespace: `ns-${index}`, resourceVersion: String(101 + index) } } });
    const plan = changes.plan();
    assert.equal(plan.all, false);
    assert.equal(!plan.all && plan.namespaces.size, MAX_CHANGED_NAMESPACES);
    for (let index = 0; index <= MAX_CHANGED_NAMESPACES; index++) emit!({ type: 'ADDED', object: { metadata: { namespace: `other-${index}` } } });
    assert.deepEqual(changes.plan(), { all: true, reason: `pods changed in more than ${MAX_CHANGED_NAMESPACES} namespaces` });
    changes.stop();
  });
});
