// Day two with revisions (issue 37), against the simulated cluster: `status` shows pods per revision and
// finds the pods whose tag moved as outdated (exit 3, as for any outdated sidecar); `rollout --in-place`
// moves them to their tag's revision with their uids and app containers kept, and `--undo` moves them
// back, revision annotation included; a label naming nothing served, and a revision removed while pods
// still carry it, are findings that name the pods.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ResolvedInjectorConfig, resolveInjectorConfig, revisionConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { runInPlaceCommand } from '../../webhook/cli/in-place-command';
import { type ClusterObjects, classifyPods } from '../../webhook/fleet/injection-status';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { statusReport } from '../../webhook/fleet/status-report';
import { formatStatus } from '../../webhook/cli/status-command';
import { FAKE_CLUSTER_IN_PLACE_OPTIONS, FakeCluster } from '../support/fake-cluster';
import { applyResponse } from '../support/recorded-reviews';
import { ENVOY_V1, ENVOY_V2, envoyInjection, revisionedConfig } from '../support/revision-fixtures';

const REV = 'sidecar-injector.io/rev';
const BEFORE = resolveInjectorConfig(revisionedConfig('r1'));
const PROMOTED = resolveInjectorConfig(revisionedConfig('r2'));
const NAMESPACES = new Map<string, Record<string, string>>([
  ['shop', { injection: 'enabled', 'kubernetes.io/metadata.name': 'shop' }],
  ['edge', { [REV]: 'canary', 'kubernetes.io/metadata.name': 'edge' }],
]);

/** `replicas` pods of Deployment `app` in `namespace`, admitted by the revision the webhook entries would choose under BEFORE. */
function deployment(cluster: FakeCluster, namespace: string, app: string, replicas: number, revision: string, labels: Record<string, string> = {}): string[] {
  const names: string[] = [];
  for (let i = 0; i < replicas; i++) {
    const pod: any = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `${app}-7c9d8f-${i}`, namespace, labels: { app, 'pod-template-hash': '7c9d8f', ...labels }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-7c9d8f`, uid: 'rs', controller: true }] },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    };
    const view = revisionConfig(BEFORE, revision);
    const injected = view ? applyResponse(pod, evaluate(createRequestFor(pod, namespace, 'u'), view).response) : pod;
    injected.status = {};
    cluster.addPod(injected);
    names.push(pod.metadata.name);
  }
  return names;
}

const objects = (cluster: FakeCluster): ClusterObjects => ({ pods: cluster.listPods(), namespaceLabels: NAMESPACES, owners: new Map() });
const report = (cluster: FakeCluster, config: ResolvedInjectorConfig) => statusReport(classifyPods(objects(cluster), { config, description: 'test' }), config);

function fleet(): FakeCluster {
  const cluster = new FakeCluster();
  deployment(cluster, 'shop', 'web', 3, 'r1');
  deployment(cluster, 'shop', 'cart', 2, 'r2', { [REV]: 'canary' });
  deployment(cluster, 'edge', 'api', 1, 'r2');
  return cluster;
}

const OPTIONS = FAKE_CLUSTER_IN_PLACE_OPTIONS;

async function inPlace(cluster: FakeCluster, config: ResolvedInjectorConfig, undo = false) {
  let stdout = '';
  let stderr = '';
  let exitCode = 0;
  const restarted: string[] = [];
  await runInPlaceCommand(
    objects(cluster),
    { config, description: 'test' },
    ['pods: fake'],
    { ...OPTIONS, undo },
    { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), exit: (code) => (exitCode ||= code) },
    async () => ({ pods: cluster, restart: async (workloads) => (restarted.push(...workloads.map((w) => `${w.kind} ${w.namespace}/${w.name}`)), true) }),
    cluster.clock(),
  );
  return { stdout, stderr, exitCode, restarted, describe: () => `exit ${exitCode}\n--- stdout\n${stdout}\n--- stderr\n${stderr}` };
}

test('status counts pods per revision: every pod on the revision its label, its namespace or the default tag chooses is up to date', () => {
  const before = report(fleet(), BEFORE);
  assert.equal(before.exitCode, 0, formatStatus(before, 'test'));
  assert.deepEqual(before.revisions!.map((revision) => [revision.name, revision.tags, revision.default, revision.running, revision.chosen]), [
    ['r1', ['stable'], true, 3, 3],
    ['r2', ['canary'], false, 3, 3],
  ]);
  const text = formatStatus(before, 'test');
  assert.match(text, /^revision r1 \(tag stable; the default\): envoy=[0-9a-f]{12}; 3 pods run it, 3 should$/m);
  assert.match(text, /^revision r2 \(tag canary\): envoy=[0-9a-f]{12}; 3 pods run it, 3 should$/m);
  assert.match(text, /^shop\s+Deployment\/web\s+r1\s+3\s+3\s+0/m);
});

test('promotion: the r1 pods are outdated (exit 3), rollout --in-place moves them to r2 keeping every uid and app container, and --undo moves them back', async () => {
  const cluster = fleet();
  const uids = new Map(cluster.listPods().map((pod: any) => [pod.metadata.name, pod.metadata.uid]));
  const promoted = report(cluster, PROMOTED);
  assert.equal(promoted.exitCode, 3, formatStatus(promoted, 'test'));
  assert.deepEqual(promoted.workloads.map((workload) => [workload.name, workload.outdated, workload.revisions]), [
    ['api', 0, { running: ['r2'], chosen: ['r2'] }],
    ['cart', 0, { running: ['r2'], chosen: ['r2'] }],
    ['web', 3, { running: ['r1'], chosen: ['r2'] }],
  ]);
  assert.match(formatStatus(promoted, 'test'), /^shop\s+Deployment\/web\s+r1 -> r2\s+3\s+0\s+3/m);

  const moved = await inPlace(cluster, PROMOTED);
  assert.equal(moved.exitCode, 0, moved.describe());
  assert.deepEqual(moved.restarted, [], 'nothing restarted: only the image differs between r1 and r2');
  for (const pod of cluster.listPods() as any[]) {
    assert.equal(pod.metadata.uid, uids.get(pod.metadata.name), `${pod.metadata.name} is the same pod`);
    assert.equal(pod.spec.containers.find((c: any) => c.name === 'envoy').image, ENVOY_V2);
    assert.equal(pod.metadata.annotations['sidecar-injector.io/revision'], 'r2');
    assert.equal(pod.status.containerStatuses.find((c: any) => c.name === 'app').restartCount, 0, `${pod.metadata.name}: the app container never restarted`);
  }
  assert.equal(report(cluster, PROMOTED).exitCode, 0);

  const undone = await inPlace(cluster, PROMOTED, true);
  assert.equal(undone.exitCode, 0, undone.describe());
  const web = (cluster.listPods() as any[]).filter((pod) => pod.metadata.labels.app === 'web');
  assert.deepEqual(web.map((pod) => [pod.spec.containers.find((c: any) => c.name === 'envoy').image, pod.metadata.annotations['sidecar-injector.io/revision']]), Array(3).fill([ENVOY_V1, 'r1']));
  assert.equal(report(cluster, BEFORE).exitCode, 0, 'rolled back: what r1 under the old tags says');
});

test('a label naming nothing served, and a revision removed while pods carry it, are findings naming the pods', () => {
  const cluster = fleet();
  deployment(cluster, 'shop', 'typo', 1, 'none', { [REV]: 'canery' });
  const typo = report(cluster, BEFORE);
  assert.equal(typo.exitCode, 4, 'pods that asked for sidecars and got none: as missing');
  assert.equal(typo.summary.unservedRevision, 1);
  assert.match(formatStatus(typo, 'test'), /shop Deployment\/typo:\n {2}1 pod: the pod is labelled sidecar-injector\.io\/rev="canery", which names no revision or tag served \(served: r1, r2, stable, canary\)/);

  const withoutR1 = resolveInjectorConfig({ injections: [], revisions: [{ name: 'r2', injections: [envoyInjection(ENVOY_V2)] }], tags: [{ name: 'stable', revision: 'r2', default: true }, { name: 'canary', revision: 'r2' }] });
  const removed = report(fleet(), withoutR1);
  assert.deepEqual(removed.removedRevisions, [{ revision: 'r1', pods: ['shop/web-7c9d8f-0', 'shop/web-7c9d8f-1', 'shop/web-7c9d8f-2'] }]);
  assert.match(formatStatus(removed, 'test'), /^revision r1: no longer served, still recorded by 3 pods: shop\/web-7c9d8f-0, shop\/web-7c9d8f-1, shop\/web-7c9d8f-2$/m);
  assert.equal(removed.exitCode, 3, 'and outdated against the revision they should run now');
});
