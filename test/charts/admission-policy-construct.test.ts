// SidecarInjector's `backend` and `admissionPolicyApiVersion` props, as a user meets them through the chart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { CONFIG_FILE_NAME } from '../../charts/engine';
import { POLICY_CONFIG_ANNOTATION } from '../../webhook/config';
import { admissionPolicyViolations } from '../support/admission-policy-schemas';
import { POLICY_TEST_INJECTIONS, injectionsOfPolicy } from '../support/admission-policy-config';
import { assertValidManifest } from '../support/openapi-validator';
import { buildChart, synthChart, synthesize } from '../support/synth-helpers';

const kinds = (manifests: any[]) => [...new Set(manifests.map((m) => m.kind))].sort();
const policies = (manifests: any[]) => manifests.filter((m) => m.kind === 'MutatingAdmissionPolicy');

test('backend "admissionPolicy": only policies and bindings, no webhook Deployment, Secret, Service, ConfigMap or Namespace', () => {
  const { manifests, injector } = synthChart({ backend: 'admissionPolicy', injections: POLICY_TEST_INJECTIONS });
  // The ValidatingAdmissionPolicy warns of bad override values (a test injection offers overrides).
  assert.deepEqual(kinds(manifests), ['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
  assert.ok(manifests.filter((m) => m.kind === 'ValidatingAdmissionPolicy').every((m) => /-overrides$/.test(m.metadata.name)));
  assert.equal(injector.deployment, undefined);
  assert.equal(injector.admissionPolicies?.apiVersion, 'v1');
  for (const manifest of manifests) {
    if (manifest.kind.startsWith('Validating')) assertValidManifest(manifest);
    else assert.deepEqual(admissionPolicyViolations(manifest), [], `${manifest.kind} ${manifest.metadata.name}`);
  }
  const binding = manifests.find((m) => m.kind === 'MutatingAdmissionPolicyBinding')!;
  assert.deepEqual(binding.spec.matchResources.namespaceSelector, {
    matchLabels: { injection: 'enabled' },
    matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-public', 'kube-node-lease', 'sidecar-injector'] }],
  });
  assert.deepEqual(binding.spec.matchResources.objectSelector, { matchExpressions: [{ key: 'sidecar-injector.io/webhook', operator: 'DoesNotExist' }] });
  assert.ok(policies(manifests).every((p) => p.metadata.name.startsWith('sidecar-injector.sidecar-injector.')));
});

test('each policy carries the whole config in an annotation, as the webhook\'s ConfigMap holds it, for status --from', () => {
  const { manifests, injector } = synthChart({ backend: 'admissionPolicy', injections: POLICY_TEST_INJECTIONS });
  const webhook = synthChart({ injections: POLICY_TEST_INJECTIONS }).manifests.find((m) => m.kind === 'ConfigMap')!;
  assert.ok(policies(manifests).length > 1, 'the test injections make more than one policy');
  for (const policy of policies(manifests)) {
    assert.deepEqual(JSON.parse(policy.metadata.annotations[POLICY_CONFIG_ANNOTATION]), JSON.parse(webhook.data[CONFIG_FILE_NAME]), policy.metadata.name);
    assert.deepEqual(JSON.parse(policy.metadata.annotations[POLICY_CONFIG_ANNOTATION]), injector.config, policy.metadata.name);
  }
});

test('a config too large for a policy\'s annotations fails synth naming injections and the limit', () => {
  const env = Array.from({ length: 3000 }, (_, i) => ({ name: `SETTING_${i}`, value: 'x'.repeat(80) }));
  const { app } = buildChart({ backend: 'admissionPolicy', podSecurity: 'privileged', injections: [{ name: 'big', trigger: { type: 'always' }, containers: [{ name: 'big', image: 'registry.example/big:1', env }] }] });
  assert.throws(
    () => synthesize(app),
    /\[sidecar-injector\/SidecarInjector\/AdmissionPolicies\] injections: the config is 3\d{5} bytes as the annotation sidecar-injector\.io\/config\.json of each MutatingAdmissionPolicy \(written for `status --from`\), over the 262144 bytes Kubernetes allows in an object's annotations; .*backend 'webhook'/,
  );
});

test('backend "admissionPolicy" with admissionPolicyApiVersion v1alpha1 emits the Kubernetes 1.32 version, valid against its schema', () => {
  const { manifests } = synthChart({ backend: 'admissionPolicy', admissionPolicyApiVersion: 'v1alpha1', injections: POLICY_TEST_INJECTIONS });
  for (const manifest of manifests) {
    // ValidatingAdmissionPolicy is GA (v1) since Kubernetes 1.30, so 1.32 serves it as v1.
    if (manifest.kind.startsWith('Validating')) {
      assert.equal(manifest.apiVersion, 'admissionregistration.k8s.io/v1');
      assertValidManifest(manifest);
      continue;
    }
    assert.equal(manifest.apiVersion, 'admissionregistration.k8s.io/v1alpha1');
    assert.deepEqual(admissionPolicyViolations(manifest), [], `${manifest.kind} ${manifest.metadata.name}`);
  }
});

test('backend "admissionPolicy" takes every injection the webhook takes: the default app\'s, qos "preserve-guaranteed" and all', () => {
  const { manifests } = synthChart({ backend: 'admissionPolicy', injections: DEFAULT_INJECTIONS });
  assert.ok(DEFAULT_INJECTIONS.some((injection) => injection.qos === 'preserve-guaranteed'), 'the default injections preserve Guaranteed pods');
  assert.deepEqual(
    policies(manifests).map((p) => [p.metadata.name, injectionsOfPolicy(p)]),
    [
      ['sidecar-injector.sidecar-injector.pods', ['envoy', 'nginx-sidecar', 'probe-defaults']],
      ['sidecar-injector.sidecar-injector.workloads', ['wait-for-it']],
    ],
  );
  assert.deepEqual(manifests.filter((m) => !m.kind.startsWith('MutatingAdmissionPolicy')).map((m) => m.kind), [], 'no webhook objects');
});

test('backend "both-where-possible": nothing is left that needs the webhook, so it makes the policies alone', () => {
  const both = synthChart({ backend: 'both-where-possible', injections: DEFAULT_INJECTIONS });
  const policyOnly = synthChart({ backend: 'admissionPolicy', injections: DEFAULT_INJECTIONS });
  assert.deepEqual(both.manifests, policyOnly.manifests);
  assert.equal(both.injector.webhookConfiguration, undefined);
  assert.deepEqual(both.injector.webhookConfig.injections, [], 'the webhook would carry no injection');
  for (const manifest of both.manifests) {
    if (manifest.kind.startsWith('MutatingAdmissionPolicy')) assert.deepEqual(admissionPolicyViolations(manifest), []);
    else assertValidManifest(manifest);
  }
});

test('backend "webhook" (the default) makes no policies and the same webhook config as before', () => {
  const { manifests, injector } = synthChart({ injections: DEFAULT_INJECTIONS });
  assert.deepEqual(policies(manifests), []);
  assert.equal(injector.admissionPolicies, undefined);
  const configMap = manifests.find((m) => m.kind === 'ConfigMap')!;
  assert.equal(configMap.data[CONFIG_FILE_NAME], injector.configJson());
  assert.equal(JSON.parse(injector.configJson()).injections.length, DEFAULT_INJECTIONS.length);
});

test('addInjection() after construction adds its policies', () => {
  const { app, injector } = buildChart({ backend: 'admissionPolicy' });
  injector.addInjection({ name: 'debug', trigger: { type: 'requested' }, targetKinds: ['Pod', 'CronJob'], containers: [{ name: 'debug', image: 'busybox:1.36' }] });
  const names = policies(synthesize(app).manifests).map((p) => p.metadata.name);
  assert.deepEqual(names, ['sidecar-injector.sidecar-injector.pods', 'sidecar-injector.sidecar-injector.cronjobs']);
  injector.addInjection({ name: 'trace', trigger: { type: 'always' }, targetKinds: ['Pod'], containers: [{ name: 'trace', image: 'busybox:1.36' }] });
  const after = policies(synthesize(app).manifests);
  assert.deepEqual(after.map((p) => [p.metadata.name, injectionsOfPolicy(p)]), [
    ['sidecar-injector.sidecar-injector.pods', ['debug', 'trace']],
    ['sidecar-injector.sidecar-injector.cronjobs', ['debug']],
  ], 'a later injection is a later mutation of the same policies');
});

test('bad backend and admissionPolicyApiVersion values fail with the prop path', () => {
  assert.throws(
    () => synthChart({ backend: 'policy' as any, admissionPolicyApiVersion: 'v2' as any }),
    (error: Error) => /backend: must be one of "webhook", "admissionPolicy", "both-where-possible", got "policy"/.test(error.message) && /admissionPolicyApiVersion: must be one of "v1", "v1beta1", "v1alpha1", got "v2"/.test(error.message),
  );
});
