// Revisions in the construct (issue 37): one synth serves r1 and r2 side by side; the webhook entries
// exclude each other, so every (namespace, pod) pair reaches exactly one revision, or the entry that
// warns about a label naming nothing served; promoting is a tag move whose output diff is two objects
// and restarts no webhook pod. Every object is checked against the Kubernetes 1.32 schema.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SidecarInjectorPropsError, type SidecarInjectorProps } from '../../charts/engine';
import { assertValidManifest } from '../support/openapi-validator';
import { buildChart, describeManifest, findManifest, namespaceLabels, selectorMatches, synthChart } from '../support/synth-helpers';
import { ENVOY_V1, ENVOY_V2, envoyInjection, revisionedProps } from '../support/revision-fixtures';

const REVISIONED = revisionedProps;

/** The paths of the webhook entries the apiserver would call for a pod with `podLabels` in namespace `namespace` labelled `nsLabels`. */
function calledPaths(webhooks: any[], namespace: string, nsLabels: Record<string, string>, podLabels: Record<string, string>): string[] {
  return webhooks
    .filter((webhook) => webhook.rules.some((rule: any) => rule.resources.includes('pods')))
    .filter((webhook) => selectorMatches(webhook.namespaceSelector, namespaceLabels(namespace, nsLabels)) && selectorMatches(webhook.objectSelector, podLabels))
    .map((webhook) => webhook.clientConfig.service.path);
}

test('r1 and r2 side by side: valid objects, both revisions in the ConfigMap, one webhook entry per revision and chooser', () => {
  const { manifests } = synthChart(REVISIONED());
  for (const manifest of manifests) assertValidManifest(manifest);
  const config = JSON.parse(findManifest(manifests, 'ConfigMap').data['config.json']);
  assert.deepEqual(config.injections, []);
  assert.deepEqual(config.revisions.map((revision: any) => [revision.name, revision.injections[0].containers[0].image]), [['r1', ENVOY_V1], ['r2', ENVOY_V2]]);
  assert.deepEqual(config.tags, [{ name: 'stable', revision: 'r1', default: true }, { name: 'canary', revision: 'r2' }]);
  assert.equal(config.unservedRevision, 'warn');
  const webhooks = findManifest(manifests, 'MutatingWebhookConfiguration').webhooks;
  assert.deepEqual(webhooks.map((webhook: any) => webhook.name.split('.sidecar-injector.sidecar-injector.svc')[0]), [
    'default.inject', 'r1.workload.inject', 'r1.namespace.inject', 'r2.workload.inject', 'r2.namespace.inject', 'unserved-workload.inject', 'unserved-namespace.inject',
  ]);
  assert.deepEqual(findManifest(manifests, 'Deployment').spec.replicas, 2, 'one Deployment serves every revision');
});

test('every namespace and pod label pair reaches exactly one revision, or the warning entry, or nothing where nothing is enabled', () => {
  const webhooks = findManifest(synthChart(REVISIONED()).manifests, 'MutatingWebhookConfiguration').webhooks;
  const rev = 'sidecar-injector.io/rev';
  const cases: [string, string, Record<string, string>, Record<string, string>, string[]][] = [
    ['an enabled namespace, no label', 'shop', { injection: 'enabled' }, {}, ['/mutate/revisions/r1']],
    ['a namespace labelled canary (enabled by the label alone)', 'shop', { [rev]: 'canary' }, {}, ['/mutate/revisions/r2']],
    ['a namespace labelled with the revision r2', 'shop', { injection: 'enabled', [rev]: 'r2' }, {}, ['/mutate/revisions/r2']],
    ['a canary workload in an enabled namespace', 'shop', { injection: 'enabled' }, { [rev]: 'canary' }, ['/mutate/revisions/r2']],
    ['the workload label wins over the namespace label', 'shop', { [rev]: 'canary' }, { [rev]: 'stable' }, ['/mutate/revisions/r1']],
    ['a workload labelled with a typo', 'shop', { injection: 'enabled' }, { [rev]: 'canery' }, ['/mutate/unserved/workload']],
    ['a namespace labelled with a removed revision', 'shop', { [rev]: 'r0' }, {}, ['/mutate/unserved/namespace']],
    ['a namespace not enabled', 'shop', {}, {}, []],
    ['kube-system, even labelled', 'kube-system', { injection: 'enabled', [rev]: 'canary' }, {}, []],
    ["the injector's own namespace", 'sidecar-injector', { [rev]: 'canary' }, { [rev]: 'canary' }, []],
    ["the webhook's own pods", 'shop', { injection: 'enabled' }, { 'sidecar-injector.io/webhook': 'x' }, []],
  ];
  for (const [what, namespace, nsLabels, podLabels, expected] of cases) {
    assert.deepEqual(calledPaths(webhooks, namespace, nsLabels, podLabels), expected, what);
  }
});

test('promotion moves the default tag: only the ConfigMap and the webhook configuration change, and no webhook pod restarts', () => {
  const before = synthChart(REVISIONED('r1')).manifests;
  const after = synthChart(REVISIONED('r2')).manifests;
  const changed = before.filter((manifest, index) => JSON.stringify(manifest) !== JSON.stringify(after[index])).map(describeManifest);
  assert.deepEqual(changed, ['ConfigMap/sidecar-injector/sidecar-injector-config', 'MutatingWebhookConfiguration/sidecar-injector.sidecar-injector']);
  const webhooks = findManifest(after, 'MutatingWebhookConfiguration').webhooks;
  const rev = 'sidecar-injector.io/rev';
  assert.deepEqual(calledPaths(webhooks, 'shop', { injection: 'enabled' }, {}), ['/mutate/revisions/r2']);
  assert.deepEqual(calledPaths(webhooks, 'shop', { [rev]: 'r1' }, {}), ['/mutate/revisions/r1'], 'r1 stays selectable by name until removed');
});

/** The lines removed and added between two texts (a longest-common-subsequence line diff). */
function changedLines(before: string, after: string): string[] {
  const a = before.split('\n');
  const b = after.split('\n');
  const common: number[][] = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--) common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
  const changed: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) (i++, j++);
    else if (j < b.length && (i === a.length || common[i][j + 1] >= common[i + 1][j])) changed.push(`+${b[j++]}`);
    else changed.push(`-${a[i++]}`);
  }
  return changed;
}

test('the promotion diff a GitOps reviewer sees: the tag, where the default entry points, and the tag in the two lists', () => {
  for (const backend of ['webhook', 'admissionPolicy'] as const) {
    const changed = changedLines(synthChart(REVISIONED('r1', { backend })).yamlText, synthChart(REVISIONED('r2', { backend })).yamlText);
    const expected =
      backend === 'webhook'
        ? ['-          "revision": "r1",', '+          "revision": "r2",', '-        path: /mutate/revisions/r1', '+        path: /mutate/revisions/r2', '-            - stable', '-            - stable', '+            - stable', '+            - stable']
        : ['-  policyName: sidecar-injector.sidecar-injector.r1.pods', '+  policyName: sidecar-injector.sidecar-injector.r2.pods', '-            - stable', '-            - stable', '+            - stable', '+            - stable'];
    const tagLines = changed.filter((line) => line.includes('tags.json'));
    assert.deepEqual([...changed.filter((line) => !line.includes('tags.json'))].sort(), [...expected].sort(), `${backend}:\n${changed.join('\n')}`);
    assert.equal(tagLines.length, backend === 'webhook' ? 0 : 4, 'the policy backend: one tags line per policy, removed and added');
  }
});

test('under failurePolicy Fail a label naming nothing served is refused', () => {
  const config = JSON.parse(findManifest(synthChart(REVISIONED('r1', { failurePolicy: 'Fail' })).manifests, 'ConfigMap').data['config.json']);
  assert.equal(config.unservedRevision, 'refuse');
});

test('bad revisions and tags fail synth naming the prop and the reason', () => {
  const failure = (props: SidecarInjectorProps) => {
    try {
      buildChart(props);
    } catch (error) {
      assert.ok(error instanceof SidecarInjectorPropsError, String(error));
      return error.issues.map((issue) => `${issue.path}: ${issue.message}`);
    }
    assert.fail('expected synth to fail');
  };
  assert.ok(failure({ ...REVISIONED(), tags: [{ name: 'stable', revision: 'r3', default: true }] }).includes('tags[0].revision: tag "stable" names no revision: "r3" is not one of r1, r2'));
  assert.ok(failure({ ...REVISIONED(), injections: [envoyInjection(ENVOY_V1)] })[0].startsWith('injections: give the injections inside revisions'));
  const badImage = REVISIONED();
  (badImage.revisions![1].injections[0] as any).containers[0].ports = [{ containerPort: 'http' }];
  assert.deepEqual(failure(badImage).filter((message) => message.startsWith('revisions[1]')).map((message) => message.split(':')[0]), ['revisions[1].injections[0].containers[0].ports[0].containerPort']);
  const { injector } = buildChart(REVISIONED());
  assert.throws(() => injector.addInjection(envoyInjection(ENVOY_V2)), /injections\[0\]: this injector has revisions/);
});
