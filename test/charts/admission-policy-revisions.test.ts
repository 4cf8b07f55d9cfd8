// Revisions on the policy backend (issue 37): each revision's MutatingAdmissionPolicies, bound once per
// way it is chosen with the webhook entries' selectors, give the object the webhook's revision gives
// (revision annotation included), evaluated with the JavaScript CEL implementation; a
// ValidatingAdmissionPolicy warns about (or refuses) a label naming nothing served, in the webhook's
// words; `status --from` and `inject --from` read it all back; a tag move changes bindings and one
// short annotation line per policy. Not yet run against a real kube-apiserver (npm run e2e): CONTRIBUTING.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { SidecarInjectorProps } from '../../charts/engine';
import { resolveInjectorConfig, revisionConfig } from '../../webhook/config';
import { type AdmissionRequest, mutate, unservedRevisionAnswer } from '../../webhook/engine';
import { loadSynthesized } from '../../webhook/cli/injector-source';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { runCli } from '../../webhook/cli/program';
import { admissionPolicyViolations } from '../support/admission-policy-schemas';
import { type SimulatedRequest, admitWithPolicies, kubernetesCelEnvironment } from '../support/admission-policy-simulator';
import { assertValidManifest } from '../support/openapi-validator';
import { applyResponse } from '../support/recorded-reviews';
import { describeManifest, makeTempDir, namespaceLabels, selectorMatches, synthChart } from '../support/synth-helpers';
import { ENVOY_V2, revisionedConfig, revisionedProps } from '../support/revision-fixtures';

const REV = 'sidecar-injector.io/rev';
const props = (defaultOn: 'r1' | 'r2' = 'r1', failurePolicy: 'Ignore' | 'Fail' = 'Ignore'): SidecarInjectorProps => revisionedProps(defaultOn, { backend: 'admissionPolicy', failurePolicy });
const pod = (labels: Record<string, string> = {}): any => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop', labels }, spec: { containers: [{ name: 'app', image: 'app:1' }] } });

test('each revision is its own policies, bound per chooser; the unserved label is a ValidatingAdmissionPolicy; all valid', () => {
  const { manifests } = synthChart(props());
  assert.deepEqual(manifests.map(describeManifest), [
    'MutatingAdmissionPolicy/sidecar-injector.sidecar-injector.r1.pods',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r1.pods.workload',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r1.pods.namespace',
    'MutatingAdmissionPolicy/sidecar-injector.sidecar-injector.r2.pods',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r2.pods.workload',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r2.pods.namespace',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.default.pods',
    'ValidatingAdmissionPolicy/sidecar-injector.sidecar-injector.unserved-revision',
    'ValidatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.unserved-revision.workload',
    'ValidatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.unserved-revision.namespace',
  ]);
  for (const manifest of manifests) {
    if (manifest.kind.startsWith('Mutating')) assert.deepEqual(admissionPolicyViolations(manifest), [], describeManifest(manifest));
    else assertValidManifest(manifest);
  }
  const vapBindings = manifests.filter((m) => m.kind === 'ValidatingAdmissionPolicyBinding');
  assert.deepEqual(vapBindings.map((binding) => binding.spec.validationActions), [['Warn'], ['Warn']]);
  const refusing = synthChart(props('r1', 'Fail')).manifests.filter((m) => m.kind === 'ValidatingAdmissionPolicyBinding');
  assert.deepEqual(refusing.map((binding) => binding.spec.validationActions), [['Deny'], ['Deny']]);
});

test("every namespace and pod label pair reaches the same revision as the webhook's entries, and the policy gives the webhook's object", () => {
  const { manifests } = synthChart(props());
  const config = resolveInjectorConfig(revisionedConfig());
  const cases: [Record<string, string>, Record<string, string>, string | undefined][] = [
    [{ injection: 'enabled' }, {}, 'r1'],
    [{ [REV]: 'canary' }, {}, 'r2'],
    [{ injection: 'enabled' }, { [REV]: 'canary' }, 'r2'],
    [{ [REV]: 'canary' }, { [REV]: 'r1' }, 'r1'],
    [{}, {}, undefined],
    [{ injection: 'enabled' }, { [REV]: 'canery' }, 'unserved'],
  ];
  for (const [nsLabels, podLabels, expected] of cases) {
    const bound = (kind: string) =>
      manifests
        .filter((m) => m.kind === kind)
        .filter((binding) => selectorMatches(binding.spec.matchResources.namespaceSelector, namespaceLabels('shop', nsLabels)) && selectorMatches(binding.spec.matchResources.objectSelector, podLabels))
        .map((binding) => binding.spec.policyName);
    const policies = bound('MutatingAdmissionPolicyBinding');
    const validating = bound('ValidatingAdmissionPolicyBinding');
    const what = JSON.stringify([nsLabels, podLabels]);
    if (expected === 'unserved') {
      assert.deepEqual([policies, validating], [[], ['sidecar-injector.sidecar-injector.unserved-revision']], what);
      continue;
    }
    assert.deepEqual(policies, expected ? [`sidecar-injector.sidecar-injector.${expected}.pods`] : [], what);
    assert.deepEqual(validating, [], what);
    if (!expected) continue;
    const object = pod(podLabels);
    const request = createRequestFor(object, 'shop', 'u') as AdmissionRequest & SimulatedRequest;
    const webhook = applyResponse(structuredClone(object), mutate(request, revisionConfig(config, expected)!));
    const simulated = admitWithPolicies(manifests.filter((m) => m.kind === 'MutatingAdmissionPolicy' && policies.includes(m.metadata.name)) as any[], { ...request, object: structuredClone(object) });
    assert.deepEqual(simulated, webhook, what);
    assert.equal(simulated.metadata.annotations['sidecar-injector.io/revision'], expected);
  }
});

test("the ValidatingAdmissionPolicy says what the webhook says, and lets opted-out objects through", () => {
  const { manifests } = synthChart(props());
  const policy = manifests.find((m) => m.kind === 'ValidatingAdmissionPolicy')!;
  const env = kubernetesCelEnvironment();
  const config = resolveInjectorConfig(revisionedConfig());
  const namespaceObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', labels: { [REV]: 'r0' } } };
  for (const [labels, chooser] of [[{ [REV]: 'canery' }, 'workload'], [{}, 'namespace']] as const) {
    const object = pod(labels);
    const message = env.evaluate(policy.spec.validations[0].messageExpression, { object, namespaceObject });
    assert.equal(message, unservedRevisionAnswer(createRequestFor(object, 'shop', 'u'), config, chooser).response.warnings![0]);
    assert.equal(env.evaluate(policy.spec.matchConditions[0].expression, { object, namespaceObject }), true);
  }
  const optedOut = { ...pod({ [REV]: 'canery' }), metadata: { ...pod().metadata, annotations: { 'sidecar-injector.io/inject': ' False ' } } };
  assert.equal(env.evaluate(policy.spec.matchConditions[0].expression, { object: optedOut, namespaceObject }), false);
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { template: { metadata: { annotations: { 'sidecar-injector.io/inject': 'false' } }, spec: {} } } };
  assert.equal(env.evaluate(policy.spec.matchConditions[0].expression, { object: deployment, namespaceObject }), false);
});

test('status --from and inject --from read the policies back, tags included; a tag move changes bindings and one tags line per policy', async () => {
  const dir = makeTempDir('policy-revisions');
  const dist = path.join(dir, 'dist.yaml');
  fs.writeFileSync(dist, synthChart(props()).yamlText);
  const source = loadSynthesized(dist);
  assert.deepEqual(source.config, resolveInjectorConfig({ ...revisionedConfig(), unservedRevision: 'warn' }));
  let stdout = '';
  const code = await runCli(['inject', '-f', '-', '--from', dist, '--namespace-labels', 'injection=enabled'], { stdout: (t) => void (stdout += t), stderr: () => undefined, readStdin: () => JSON.stringify(pod({ [REV]: 'canary' })) });
  assert.equal(code, 0);
  assert.equal(parseAllDocuments(stdout)[0].toJS().spec.containers[1].image, ENVOY_V2);

  const before = synthChart(props('r1')).manifests;
  const after = synthChart(props('r2')).manifests;
  const changed = after.filter((manifest) => !before.some((old) => JSON.stringify(old) === JSON.stringify(manifest))).map(describeManifest);
  assert.deepEqual(changed, [
    'MutatingAdmissionPolicy/sidecar-injector.sidecar-injector.r1.pods',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r1.pods.workload',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r1.pods.namespace',
    'MutatingAdmissionPolicy/sidecar-injector.sidecar-injector.r2.pods',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r2.pods.workload',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r2.pods.namespace',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.default.pods',
  ]);
  const policyBefore = before.find((m) => m.metadata.name === 'sidecar-injector.sidecar-injector.r2.pods')!;
  const policyAfter = after.find((m) => m.metadata.name === 'sidecar-injector.sidecar-injector.r2.pods')!;
  assert.deepEqual({ ...policyAfter, metadata: { ...policyAfter.metadata, annotations: { ...policyAfter.metadata.annotations, 'sidecar-injector.io/tags.json': 'x' } } }, {
    ...policyBefore,
    metadata: { ...policyBefore.metadata, annotations: { ...policyBefore.metadata.annotations, 'sidecar-injector.io/tags.json': 'x' } },
  }, 'only the tags annotation of a policy changes');
});
