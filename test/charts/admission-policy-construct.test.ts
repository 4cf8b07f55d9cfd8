// SidecarInjector's `backend` and `admissionPolicyApiVersion` props, as a user meets them through the chart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { CONFIG_FILE_NAME, SidecarInjectorPropsError } from '../../charts';
import { admissionPolicyViolations } from '../support/admission-policy-schemas';
import { POLICY_TEST_INJECTIONS, injectionsOfPolicy } from '../support/admission-policy-config';
import { assertValidManifest } from '../support/openapi-validator';
import { buildChart, synthChart, synthesize } from '../support/synth-helpers';

const kinds = (manifests: any[]) => [...new Set(manifests.map((m) => m.kind))].sort();
const policies = (manifests: any[]) => manifests.filter((m) => m.kind === 'MutatingAdmissionPolicy');

test('backend "admissionPolicy": only policies and bindings, no webhook Deployment, Secret, Service, ConfigMap or Namespace', () => {
  const { manifests, injector } = synthChart({ backend: 'admissionPolicy', injections: POLICY_TEST_INJECTIONS });
  assert.deepEqual(kinds(manifests), ['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding']);
  assert.equal(injector.deployment, undefined);
  assert.equal(injector.admissionPolicies?.apiVersion, 'v1');
  for (const manifest of manifests) assert.deepEqual(admissionPolicyViolations(manifest), [], `${manifest.kind} ${manifest.metadata.name}`);
  const binding = manifests.find((m) => m.kind === 'MutatingAdmissionPolicyBinding')!;
  assert.deepEqual(binding.spec.matchResources.namespaceSelector, {
    matchLabels: { injection: 'enabled' },
    matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-public', 'kube-node-lease', 'sidecar-injector'] }],
  });
  assert.deepEqual(binding.spec.matchResources.objectSelector, { matchExpressions: [{ key: 'sidecar-injector.io/webhook', operator: 'DoesNotExist' }] });
  assert.ok(policies(manifests).every((p) => p.metadata.name.startsWith('sidecar-injector.sidecar-injector.')));
});

test('backend "admissionPolicy" with admissionPolicyApiVersion v1alpha1 emits the Kubernetes 1.32 version, valid against its schema', () => {
  const { manifests } = synthChart({ backend: 'admissionPolicy', admissionPolicyApiVersion: 'v1alpha1', injections: POLICY_TEST_INJECTIONS });
  for (const manifest of manifests) {
    assert.equal(manifest.apiVersion, 'admissionregistration.k8s.io/v1alpha1');
    assert.deepEqual(admissionPolicyViolations(manifest), [], `${manifest.kind} ${manifest.metadata.name}`);
  }
});

test('backend "admissionPolicy" refuses an injection CEL cannot express, naming it, the reason and the way out', () => {
  assert.throws(
    () => synthChart({ backend: 'admissionPolicy', injections: DEFAULT_INJECTIONS }),
    (error: Error) =>
      error instanceof SidecarInjectorPropsError &&
      /injections\[0\]: injection "envoy" cannot be a MutatingAdmissionPolicy: qos "preserve-guaranteed"/.test(error.message) &&
      /backend "both-where-possible" keeps it on the webhook/.test(error.message),
  );
});

test('backend "both-where-possible": the webhook carries only what CEL cannot express, the policies the rest', () => {
  const { manifests, injector } = synthChart({ backend: 'both-where-possible', injections: DEFAULT_INJECTIONS });
  const configMap = manifests.find((m) => m.kind === 'ConfigMap')!;
  const webhookInjections = JSON.parse(configMap.data[CONFIG_FILE_NAME]).injections.map((i: any) => i.name);
  assert.deepEqual(webhookInjections, ['envoy', 'nginx-sidecar']);
  assert.deepEqual(
    policies(manifests).map((p) => [p.metadata.name, injectionsOfPolicy(p)]),
    [
      ['sidecar-injector.sidecar-injector.workloads', ['wait-for-it']],
      ['sidecar-injector.sidecar-injector.pods', ['probe-defaults']],
    ],
  );
  assert.deepEqual(injector.config.injections.map((i) => i.name), DEFAULT_INJECTIONS.map((i) => i.name), 'config still lists every injection');
  const webhook = manifests.find((m) => m.kind === 'MutatingWebhookConfiguration')!;
  assert.deepEqual(webhook.webhooks[0].rules.map((r: any) => r.resources), [['pods']], 'the webhook is called only for the kinds its injections target');
  for (const manifest of manifests) {
    if (manifest.apiVersion.startsWith('admissionregistration.k8s.io/') && manifest.kind.startsWith('MutatingAdmissionPolicy')) {
      assert.deepEqual(admissionPolicyViolations(manifest), []);
    } else assertValidManifest(manifest);
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
