// Injections in audit mode on the policy backend (issue 38): a ValidatingAdmissionPolicy per template
// shape, bound with validationActions [Warn, Audit] and the mutating bindings' selectors, warns exactly
// where the webhook warns, in its words, on the object the enforcing injections' MutatingAdmissionPolicies
// left; the enforcing injections inject as before. The audit policies carry the config, so `status
// --from` reads an injector whose injections are all in audit mode. Evaluated with the JavaScript CEL
// implementation; not yet run against a real kube-apiserver (npm run e2e): CONTRIBUTING.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { type Injection, resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { auditShapePolicies } from '../../charts/admission-policy/audit-policy';
import { shapePolicies } from '../../charts/admission-policy/injection-policy';
import { classifyPods } from '../../webhook/fleet/injection-status';
import { loadSynthesized } from '../../webhook/cli/injector-source';
import { statusReport } from '../../webhook/fleet/status-report';
import { POLICY_TEST_INJECTIONS, triggerVariants } from '../support/admission-policy-config';
import { type SimulatedPolicy, admitWithPolicies, failedValidations } from '../support/admission-policy-simulator';
import { admissionPolicyViolations } from '../support/admission-policy-schemas';
import { assertValidManifest } from '../support/openapi-validator';
import { applyResponse, loadReview, reviewNames } from '../support/recorded-reviews';
import { describeManifest, makeTempDir, namespaceLabels, selectorMatches, synthChart } from '../support/synth-helpers';
import { ENVOY_V1, envoyInjection, revisionedProps } from '../support/revision-fixtures';

const PREFIX = 'sidecar-injector.io';

/** The test injections with every other one in audit mode: `parity` 0 audits the first, 1 the second. */
function halfAudited(parity: 0 | 1) {
  const injections = POLICY_TEST_INJECTIONS.map((injection, index): Injection => (index % 2 === parity ? { ...injection, mode: 'audit' } : injection));
  const config = resolveInjectorConfig({ annotationPrefix: PREFIX, injections });
  const audited = config.injections.filter((injection) => injection.mode === 'audit').map((injection) => injection.name);
  const enforced = config.injections.filter((injection) => injection.mode !== 'audit').map((injection) => injection.name);
  const mutating: SimulatedPolicy[] = shapePolicies(config, enforced, { failurePolicy: 'Fail' }).map((policy) => ({ metadata: { name: `test.${policy.shape}` }, spec: policy.spec, bindings: policy.bindings }));
  const validating: SimulatedPolicy[] = auditShapePolicies(config, audited).map((policy) => ({ metadata: { name: `test.${policy.shape}` }, spec: policy.spec }));
  return { config, audited, mutating, validating };
}

for (const parity of [0, 1] as const) {
  test(`audit mode (every other test injection, from the ${parity === 0 ? 'first' : 'second'}): the policies warn where and as the webhook warns, and inject the rest as it does`, () => {
    const { config, audited, mutating, validating } = halfAudited(parity);
    const warned = new Set<string>();
    for (const name of reviewNames()) {
      const request = loadReview(name).request;
      if (!request.object) continue;
      for (const [label, object] of triggerVariants(request.object)) {
        const result = evaluate({ ...request, object }, config);
        const webhookObject = applyResponse(object, result.response);
        const policyObject = admitWithPolicies(mutating, { ...request, object });
        assert.deepEqual(policyObject, webhookObject, `${name} (${label}): the enforcing policies' object (actual) vs the webhook's (expected)`);
        const webhookWarnings = (result.response.warnings ?? []).filter((warning) => warning.startsWith('audit: ')).sort();
        const policyWarnings = validating.flatMap((policy) => failedValidations(policy, { ...request, object: policyObject }, policyObject)).sort();
        assert.deepEqual(policyWarnings, webhookWarnings, `${name} (${label}): the audit policies' warnings (actual) vs the webhook's (expected)`);
        for (const warning of policyWarnings) warned.add(/^audit: injection "([^"]+)"/.exec(warning)![1]);
      }
    }
    assert.deepEqual([...warned].sort(), [...audited].sort(), 'every injection in audit mode warned somewhere: none of the comparisons passed vacuously');
  });
}

const logShipper: Injection = {
  name: 'log-shipper',
  mode: 'audit',
  trigger: { type: 'annotation', key: 'logs.example.com/ship' },
  targetKinds: ['Pod', 'Deployment'],
  containers: [{ name: 'log-shipper', image: 'fluent/fluent-bit:3.1' }],
};

test('synthesized: a ValidatingAdmissionPolicy per shape of the audited injections, named as the shape\'s mutating policy, bound Warn and Audit with its selectors; all valid', () => {
  const { manifests } = synthChart({ backend: 'admissionPolicy', injections: [envoyInjection(ENVOY_V1), logShipper] });
  assert.deepEqual(manifests.map(describeManifest), [
    'MutatingAdmissionPolicy/sidecar-injector.sidecar-injector.pods',
    'MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.pods',
    'ValidatingAdmissionPolicy/sidecar-injector.sidecar-injector.pods',
    'ValidatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.pods',
    'ValidatingAdmissionPolicy/sidecar-injector.sidecar-injector.workloads',
    'ValidatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.workloads',
  ]);
  for (const manifest of manifests) {
    if (manifest.kind.startsWith('Mutating')) assert.deepEqual(admissionPolicyViolations(manifest), [], describeManifest(manifest));
    else assertValidManifest(manifest);
  }
  const mutatingBinding = manifests.find((m) => m.kind === 'MutatingAdmissionPolicyBinding')!;
  for (const binding of manifests.filter((m) => m.kind === 'ValidatingAdmissionPolicyBinding')) {
    assert.deepEqual(binding.spec.validationActions, ['Warn', 'Audit']);
    assert.deepEqual(binding.spec.matchResources, mutatingBinding.spec.matchResources, 'the audit applies where the injections do');
  }
  for (const policy of manifests.filter((m) => m.kind === 'ValidatingAdmissionPolicy')) {
    assert.equal(policy.spec.failurePolicy, 'Ignore', 'an audit never stands in the way');
    assert.deepEqual(policy.spec.validations.map((v: any) => v.message), [
      'audit: injection "log-shipper" would add containers log-shipper; it is in audit mode, so nothing was added',
    ]);
  }
  const mutating = manifests.find((m) => m.kind === 'MutatingAdmissionPolicy')!;
  assert.doesNotMatch(JSON.stringify(mutating.spec), /log-shipper/, 'the audited injection is in no mutation');
});

test('an injector whose injections are all in audit mode: status --from reads the config off the audit policies, and counts the pods it would change', () => {
  const dir = makeTempDir('policy-audit');
  const dist = path.join(dir, 'dist.yaml');
  const { yamlText, manifests } = synthChart({ backend: 'admissionPolicy', injections: [{ ...envoyInjection(ENVOY_V1), mode: 'audit' }] });
  assert.equal(manifests.some((m) => m.kind === 'MutatingAdmissionPolicy'), false);
  fs.writeFileSync(dist, yamlText);
  const source = loadSynthesized(dist);
  assert.deepEqual(source.config.injections.map((injection) => [injection.name, injection.mode]), [['envoy', 'audit']]);
  const binding = manifests.find((m) => m.kind === 'ValidatingAdmissionPolicyBinding')!;
  const enabled = namespaceLabels('shop', { injection: 'enabled' });
  assert.equal(selectorMatches(binding.spec.matchResources.namespaceSelector, enabled), true);
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop' }, spec: { containers: [{ name: 'app', image: 'app:1' }] } };
  const elsewhere = { ...pod, metadata: { name: 'other', namespace: 'plain' } };
  const statuses = classifyPods({ pods: [pod, elsewhere], namespaceLabels: new Map([['shop', enabled], ['plain', namespaceLabels('plain')]]), owners: new Map() }, source);
  const report = statusReport(statuses, source.config);
  assert.deepEqual(report.workloads.map((workload) => [workload.namespace, workload.name, workload.audit]), [['shop', 'web', 1]], 'only where the audit policy binds');
});

test('with revisions: an audited revision warns where the default tag applies it, and status --from counts its pods as audit', () => {
  const props = revisionedProps('r1', { backend: 'admissionPolicy' });
  const audited = { ...props, revisions: props.revisions!.map((revision) => (revision.name === 'r1' ? { ...revision, injections: revision.injections.map((injection) => ({ ...injection, mode: 'audit' as const })) } : revision)) };
  const { manifests, yamlText } = synthChart(audited);
  const names = manifests.map(describeManifest);
  for (const name of [
    'ValidatingAdmissionPolicy/sidecar-injector.sidecar-injector.r1.pods',
    'ValidatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r1.pods.workload',
    'ValidatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.r1.pods.namespace',
    'ValidatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.default.pods',
    'MutatingAdmissionPolicy/sidecar-injector.sidecar-injector.r2.pods',
  ]) assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
  assert.equal(names.includes('MutatingAdmissionPolicy/sidecar-injector.sidecar-injector.r1.pods'), false, 'r1 applies nothing');
  assert.equal(names.includes('MutatingAdmissionPolicyBinding/sidecar-injector.sidecar-injector.default.pods'), false);
  for (const manifest of manifests) {
    if (manifest.kind.startsWith('Mutating')) assert.deepEqual(admissionPolicyViolations(manifest), [], describeManifest(manifest));
    else assertValidManifest(manifest);
  }
  const defaultBinding = manifests.find((m) => m.kind === 'ValidatingAdmissionPolicyBinding' && m.metadata.name.endsWith('.default.pods'))!;
  assert.equal(defaultBinding.spec.policyName, 'sidecar-injector.sidecar-injector.r1.pods');
  const dist = path.join(makeTempDir('policy-audit-revisions'), 'dist.yaml');
  fs.writeFileSync(dist, yamlText);
  const source = loadSynthesized(dist);
  const enabled = namespaceLabels('shop', { injection: 'enabled' });
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop' }, spec: { containers: [{ name: 'app', image: 'app:1' }] } };
  const report = statusReport(classifyPods({ pods: [pod], namespaceLabels: new Map([['shop', enabled]]), owners: new Map() }, source), source.config);
  assert.deepEqual(report.workloads.map((workload) => [workload.name, workload.audit, workload.missing]), [['web', 1, 0]], 'audited by r1 through the default tag, missing nothing');
});
