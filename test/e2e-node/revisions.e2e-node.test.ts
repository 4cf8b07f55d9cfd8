// npm run e2e:node, revisions and tags (issue 37): on its own one-node cluster (support/node-suite.ts), the
// default app with revisions r1 (Envoy 1.20.3) and r2 (Envoy 1.31.0), the default tag `stable` on r1 and
// `canary` on r2, in one synth. Which Envoy each pod runs is read from the kubelet's own report (imageID);
// the promotion moves `stable` to r2 and `rollout --in-place` moves the r1 pods without restarting their apps;
// the rollback moves it back to r1, and `rollout --in-place` moves them back the same way.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeCluster } from './support/node-cluster';
import { cli, describePod, describeRun, isReady, kubectl, listPods, waitForPod } from './support/node-checks';
import {
  BACKEND,
  ENABLED,
  ENVOY_FIRST,
  ENVOY_PINNED,
  INJECTOR_NAMESPACE,
  WEBHOOK,
  app,
  apply,
  applyConfig,
  cleanUp,
  namespace,
  podFacts,
  progress,
  revisionVariant,
  shown,
  skip,
  startSuite,
  stopSuite,
} from './support/node-suite';

const REV = 'sidecar-injector.io/rev';
const REVISION = 'sidecar-injector.io/revision';
const IMAGE = { r1: `envoyproxy/envoy:v${ENVOY_FIRST}`, r2: `envoyproxy/envoy:v${ENVOY_PINNED}` } as const;

let cluster: NodeCluster;
before(async () => {
  if (!skip) cluster = await startSuite();
});
after(stopSuite);

/** A Deployment of `replicas` of the app whose pod template carries `labels`. */
function deployment(ns: string, name: string, replicas: number, labels: Record<string, string> = {}): void {
  apply({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name, ...labels } }, spec: { containers: [app('app')] } } },
  });
  kubectl(cluster, ['-n', ns, 'rollout', 'status', `deploy/${name}`, '--timeout=180s']);
}

/** Each live pod of `app=<name>`: its revision annotation, Envoy's image in the spec, and the imageID the kubelet reports. */
async function revisionsOf(ns: string, name: string) {
  const pods = (await listPods(cluster, ns, `app=${name}`)).filter((pod) => !pod.metadata.deletionTimestamp);
  const facts = await podFacts(ns, `app=${name}`);
  return pods.map((pod) => {
    const fact = facts.find((candidate) => candidate.uid === pod.metadata.uid)!;
    return { name: pod.metadata.name, uid: pod.metadata.uid, revision: pod.metadata.annotations?.[REVISION], image: fact.envoySpecImage, imageId: fact.envoyImageId, fact };
  });
}

describe(`revisions and tags on a node (${BACKEND})`, { skip }, () => {
  /** The imageID the kubelet reports for each revision's Envoy, learned from the first pods. */
  const imageIds: Partial<Record<'r1' | 'r2', string>> = {};
  const expectRevision = (pods: Awaited<ReturnType<typeof revisionsOf>>, revision: 'r1' | 'r2', what: string) => {
    for (const pod of pods) {
      assert.deepEqual([pod.revision, pod.image], [revision, IMAGE[revision]], `${what}: ${pod.name}`);
      imageIds[revision] ??= pod.imageId;
      assert.equal(pod.imageId, imageIds[revision], `${what}: ${pod.name} runs ${revision}'s Envoy by the kubelet's report`);
    }
  };

  /**
   * `rollout --in-place --from outdir` in rev-default: exit 0, the pods of `before` kept with their apps
   * never restarted, each now on `revision`, and status then exits 0.
   */
  const movedInPlace = async (outdir: string, shownAs: string, before: Awaited<ReturnType<typeof revisionsOf>>, revision: 'r1' | 'r2') => {
    const moved = await cli(cluster, ['rollout', '--in-place', '--from', outdir, '-n', 'rev-default', '--timeout', '300s']);
    shown(`rollout --in-place --from ${shownAs} -n rev-default`, moved);
    assert.equal(moved.status, 0, describeRun(moved));
    const after = await revisionsOf('rev-default', 'web');
    assert.deepEqual(after.map((pod) => pod.uid).sort(), before.map((pod) => pod.uid).sort(), 'the same pods');
    for (const pod of after) {
      const was = before.find((earlier) => earlier.uid === pod.uid)!;
      assert.deepEqual({ appRestarts: pod.fact.appRestarts, appStarted: pod.fact.appProcessStart }, { appRestarts: 0, appStarted: was.fact.appProcessStart }, `${pod.name}: the app never restarted`);
    }
    expectRevision(after, revision, `the pods moved in place to ${revision}`);
    const fresh = await cli(cluster, ['status', '--from', outdir, '-n', 'rev-default']);
    shown(`status --from ${shownAs} -n rev-default`, fresh);
    assert.equal(fresh.status, 0, describeRun(fresh));
  };

  test('r1 and r2 in one synth: a default namespace runs r1, a namespace labelled canary runs r2, a workload labelled canary in a default namespace runs r2', async () => {
    // The policies of the app without revisions have other names: pruned, as Argo CD or Flux prune them.
    if (!WEBHOOK) progress(kubectl(cluster, ['delete', 'mutatingadmissionpolicies,mutatingadmissionpolicybindings', '-l', 'app.kubernetes.io/name=sidecar-injector']).trim());
    await applyConfig(revisionVariant('r1'));
    namespace('rev-default', ENABLED);
    namespace('rev-canary', { [REV]: 'canary' });
    deployment('rev-default', 'web', 2);
    deployment('rev-canary', 'web', 1);
    deployment('rev-default', 'canary-web', 2, { [REV]: 'canary' });
    expectRevision(await revisionsOf('rev-default', 'web'), 'r1', 'a default namespace');
    expectRevision(await revisionsOf('rev-canary', 'web'), 'r2', 'a namespace labelled canary');
    expectRevision(await revisionsOf('rev-default', 'canary-web'), 'r2', 'a workload labelled canary');
    assert.notEqual(imageIds.r1, imageIds.r2, 'two Envoys, two images');
    progress(`revisions: r1's Envoy runs as ${imageIds.r1}, r2's as ${imageIds.r2}`);
  });

  test('a canary pod deleted by hand comes back on r2; a scale-up of the canary workload adds r2 pods', async () => {
    const [victim] = await revisionsOf('rev-default', 'canary-web');
    kubectl(cluster, ['-n', 'rev-default', 'delete', 'pod', victim.name, '--wait=true']);
    kubectl(cluster, ['-n', 'rev-default', 'scale', 'deploy/canary-web', '--replicas=3']);
    kubectl(cluster, ['-n', 'rev-default', 'rollout', 'status', 'deploy/canary-web', '--timeout=180s']);
    const pods = await revisionsOf('rev-default', 'canary-web');
    assert.equal(pods.length, 3);
    assert.ok(!pods.some((pod) => pod.uid === victim.uid), 'the deleted pod is gone');
    expectRevision(pods, 'r2', 'the canary workload after a delete and a scale-up');
  });

  test('promotion: stable moves to r2; no running pod changes, new pods get r2, status exits 3, rollout --in-place moves the r1 pods keeping them and their apps, status exits 0', async () => {
    const webhookPods = WEBHOOK ? (await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector')).map((pod) => pod.metadata.uid).sort() : [];
    const before = await revisionsOf('rev-default', 'web');
    const promoted = revisionVariant('r2');
    await applyConfig(promoted);
    if (WEBHOOK) {
      const now = (await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector')).map((pod) => pod.metadata.uid).sort();
      assert.deepEqual(now, webhookPods, 'moving a tag restarts no webhook pod');
    }
    const unchanged = await revisionsOf('rev-default', 'web');
    assert.deepEqual(unchanged.map((pod) => [pod.uid, pod.revision, pod.imageId, pod.fact.envoyRestarts]), before.map((pod) => [pod.uid, pod.revision, pod.imageId, pod.fact.envoyRestarts]), 'no running pod changed');

    kubectl(cluster, ['-n', 'rev-default', 'scale', 'deploy/web', '--replicas=3']);
    kubectl(cluster, ['-n', 'rev-default', 'rollout', 'status', 'deploy/web', '--timeout=180s']);
    const scaled = await revisionsOf('rev-default', 'web');
    const added = scaled.filter((pod) => !before.some((earlier) => earlier.uid === pod.uid));
    assert.equal(added.length, 1);
    expectRevision(added, 'r2', 'a pod made after the promotion');
    // The new pod is up to date; only the two made before count.
    kubectl(cluster, ['-n', 'rev-default', 'scale', 'deploy/web', '--replicas=2']);
    await cluster.until('deploy/web back to 2 pods', async () => (await listPods(cluster, 'rev-default', 'app=web')).length === 2, 120_000);

    const stale = await cli(cluster, ['status', '--from', promoted, '-n', 'rev-default']);
    shown('status --from dist-promoted/ -n rev-default', stale);
    assert.equal(stale.status, 3, describeRun(stale));
    // The scale-down may have kept the r2 pod: then the workload runs both.
    assert.match(stale.stdout, /Deployment\/web\s+r1(\+r2)? -> r2/, describeRun(stale));

    await movedInPlace(promoted, 'dist-promoted/', await revisionsOf('rev-default', 'web'), 'r2');
  });

  test('rollback: stable moved back to r1 and applied; new pods get r1, the canary namespace stays on r2, status names the r2 pods of the default namespace outdated, rollout --in-place moves them back keeping them and their apps', async () => {
    const rolledBack = revisionVariant('r1');
    const before = await revisionsOf('rev-default', 'web');
    expectRevision(before, 'r2', 'the default namespace after the promotion');
    await applyConfig(rolledBack);
    deployment('rev-default', 'after-rollback', 1);
    expectRevision(await revisionsOf('rev-default', 'after-rollback'), 'r1', 'a workload made after the rollback');
    // A pod of the canary namespace made again after the rollback: still r2.
    const [canary] = await revisionsOf('rev-canary', 'web');
    kubectl(cluster, ['-n', 'rev-canary', 'delete', 'pod', canary.name, '--wait=true']);
    kubectl(cluster, ['-n', 'rev-canary', 'rollout', 'status', 'deploy/web', '--timeout=180s']);
    await cluster.until('the canary pod made again', async () => (await revisionsOf('rev-canary', 'web')).some((pod) => pod.uid !== canary.uid), 120_000);
    expectRevision((await revisionsOf('rev-canary', 'web')).filter((pod) => pod.uid !== canary.uid), 'r2', 'a pod of the canary namespace made after the rollback');

    const stale = await cli(cluster, ['status', '--from', rolledBack, '-n', 'rev-default']);
    shown('status --from dist-rolled-back/ -n rev-default', stale);
    assert.equal(stale.status, 3, describeRun(stale));
    assert.match(stale.stdout, /Deployment\/web\s+r2 -> r1/, describeRun(stale));
    assert.doesNotMatch(stale.stdout, /Deployment\/canary-web\s+r2 -> r1/, 'the workload labelled canary stays on r2');

    await movedInPlace(rolledBack, 'dist-rolled-back/', before, 'r1');
    expectRevision(await revisionsOf('rev-default', 'canary-web'), 'r2', 'the canary workload, untouched');
  });

  test('a workload labelled with a revision nobody serves: kubectl prints the warning, the pod runs without Envoy, and status names it', async () => {
    const applied = cluster.kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'typo', namespace: 'rev-default', labels: { [REV]: 'canery' } }, spec: { containers: [app('app')] } }));
    assert.equal(applied.status, 0, applied.stderr);
    // The webhook's warning is the message itself; a ValidatingAdmissionPolicy's Warn wraps it in the policy's name.
    assert.match(applied.stderr, /Warning: .*label sidecar-injector\.io\/rev="canery" names no revision or tag this injector serves \(served: r1, r2, stable, canary\): admitted without sidecars/, applied.stderr);
    const pod = await waitForPod(cluster, 'rev-default', 'typo', 'Ready', isReady);
    assert.deepEqual(pod.spec.containers.map((c: any) => c.name), ['app'], describePod(pod));
    const status = await cli(cluster, ['status', '--from', revisionVariant('r2'), '-n', 'rev-default']);
    shown('status --from dist-promoted/ -n rev-default', status);
    assert.equal(status.status, 4, describeRun(status));
    assert.match(status.stdout, /the pod is labelled sidecar-injector\.io\/rev="canery", which names no revision or tag served/);
    cleanUp('rev-default', 'rev-canary');
  });
});
