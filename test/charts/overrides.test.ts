// Overrides in the construct (issue 39): what an override offer adds to the output. Only an override
// that reads namespace defaults gives the webhook a token, a ServiceAccount and a ClusterRole of the
// two verbs its namespace watch calls, and egress to the apiserver; without one the output keeps no
// RBAC, no token and no egress. Every object is checked against the Kubernetes 1.32 schema.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SidecarInjectorPropsError } from '../../charts/engine';
import type { InjectionProps } from '../../charts/engine';
import { NAMESPACE_READER_RULES } from '../../charts/namespace-reader';
import { admissionPolicyViolations } from '../support/admission-policy-schemas';
import { kubernetesCelEnvironment } from '../support/admission-policy-simulator';
import { assertValidManifest } from '../support/openapi-validator';
import { buildChart, findManifest, synthChart, synthesize } from '../support/synth-helpers';

const RESTRICTED = { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } };
const envoy = (fromNamespace: boolean): InjectionProps => ({
  name: 'envoy',
  trigger: { type: 'always' },
  containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.0', securityContext: RESTRICTED, resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } } }],
  overrides: [
    { annotation: 'envoy.example.com/cpu-request', container: 'envoy', resource: 'requests.cpu', max: '2' },
    { annotation: 'envoy.example.com/memory-request', container: 'envoy', resource: 'requests.memory', max: '512Mi', fromNamespace },
  ],
});

test('overrides read from pods alone: no RBAC, no token, no egress, as without overrides', () => {
  const { manifests } = synthChart({ injections: [envoy(false)] });
  for (const manifest of manifests) assertValidManifest(manifest);
  assert.deepEqual(manifests.filter((m) => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(m.kind)), []);
  const pod = findManifest(manifests, 'Deployment').spec.template.spec;
  assert.equal(pod.automountServiceAccountToken, false);
  assert.equal(pod.serviceAccountName, undefined);
  assert.equal(findManifest(manifests, 'NetworkPolicy').spec.egress, undefined, 'Egress in policyTypes with no rule: none');
  const config = JSON.parse(findManifest(manifests, 'ConfigMap').data['config.json']);
  assert.deepEqual(config.injections[0].overrides, envoy(false).overrides, 'the offer reaches the webhook as written');
});

test('an override with fromNamespace: its own ServiceAccount and token, a ClusterRole of list and watch on namespaces, egress to the apiserver', () => {
  const { manifests } = synthChart({ namespace: 'platform', apiServerCidrs: ['10.0.0.0/24'], injections: [envoy(true)] });
  // The fixtures hold no OpenAPI document of rbac.authorization.k8s.io/v1: those two objects are
  // compared whole below, every field, instead.
  for (const manifest of manifests) if (manifest.apiVersion !== 'rbac.authorization.k8s.io/v1') assertValidManifest(manifest);
  const account = findManifest(manifests, 'ServiceAccount');
  const role = findManifest(manifests, 'ClusterRole');
  const binding = findManifest(manifests, 'ClusterRoleBinding');
  const metadata = { name: 'sidecar-injector.platform-namespace-reader', labels: account.metadata.labels };
  assert.deepEqual(role, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata, rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] }] });
  assert.deepEqual(role.rules, NAMESPACE_READER_RULES);
  assert.deepEqual(binding, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata,
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role.metadata.name },
    subjects: [{ kind: 'ServiceAccount', name: account.metadata.name, namespace: 'platform' }],
  });
  assert.equal(account.automountServiceAccountToken, false, 'no other pod gets its token by default');
  const pod = findManifest(manifests, 'Deployment').spec.template.spec;
  assert.equal(pod.serviceAccountName, account.metadata.name);
  assert.equal(pod.automountServiceAccountToken, true);
  assert.deepEqual(findManifest(manifests, 'NetworkPolicy').spec.egress, [{ to: [{ ipBlock: { cidr: '10.0.0.0/24' } }], ports: [{ protocol: 'TCP', port: 443 }, { protocol: 'TCP', port: 6443 }] }]);
});

test('an injection with such an override added after construction makes the reader too', () => {
  const { app, injector } = buildChart({ injections: [] });
  assert.equal(injector.namespaceReader, undefined);
  injector.addInjection(envoy(true));
  assert.ok(injector.namespaceReader);
  const { manifests } = synthesize(app);
  assert.equal(findManifest(manifests, 'Deployment').spec.template.spec.automountServiceAccountToken, true);
  assert.equal(manifests.filter((m) => m.kind === 'ClusterRole').length, 1);
});

test('a bad offer fails synth naming the prop and the reason', () => {
  const bad = { ...envoy(false), overrides: [{ annotation: 'envoy.example.com/cpu-request', container: 'envoy', resource: 'requests.cpu', max: 'lots' }] } as InjectionProps;
  assert.throws(() => synthChart({ injections: [bad] }), (error: unknown) => error instanceof SidecarInjectorPropsError && /injections\[0\]\.overrides\[0\]\.max: "lots" is not a quantity above zero/.test(error.message));
});

test('the policy backend makes an injection with overrides a policy that reads namespaceObject, with no RBAC at all', () => {
  const { manifests } = synthChart({ backend: 'admissionPolicy', injections: [envoy(true)] });
  for (const manifest of manifests) {
    if (/^MutatingAdmissionPolicy/.test(manifest.kind)) assert.deepEqual(admissionPolicyViolations(manifest), [], manifest.metadata.name);
    else assertValidManifest(manifest);
  }
  assert.deepEqual(manifests.filter((m) => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Deployment'].includes(m.kind)), [], 'no webhook, no RBAC: the apiserver reads the namespace itself');
  const policies = manifests.filter((m) => m.kind === 'MutatingAdmissionPolicy');
  const text = JSON.stringify(policies);
  assert.match(text, /namespaceObject\.metadata\.annotations\[\\"envoy\.example\.com\/memory-request\\"\]/, 'the namespace default is read from namespaceObject');
  assert.match(text, /envoy\.example\.com\/cpu-request/);
});

describe("the webhook hears of a workload's override values: one more entry, called only for a template that carries one", () => {
  const entries = (props: Parameters<typeof synthChart>[0]) => {
    const { manifests } = synthChart(props);
    for (const manifest of manifests) assertValidManifest(manifest);
    return findManifest(manifests, 'MutatingWebhookConfiguration').webhooks as any[];
  };
  const context = (kind: string, object: any) => ({ request: { kind: { group: kind === 'CronJob' || kind === 'Job' ? 'batch' : 'apps', version: 'v1', kind } }, object });
  const deployment = (annotations: Record<string, string>, metadata: object = {}) => ({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', ...metadata }, spec: { template: { metadata: { annotations }, spec: { containers: [] } } },
  });
  const cronJob = (annotations?: Record<string, string>) => ({
    apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'web' }, spec: { jobTemplate: { spec: { template: { metadata: annotations ? { annotations } : {}, spec: { containers: [] } } } } },
  });

  test('an injection of pods offering overrides: every workload kind, Ignore, not reinvoked, with the injecting entry\'s selectors and path', () => {
    const [inject, check, ...rest] = entries({ injections: [envoy(false)] });
    assert.deepEqual(rest, []);
    assert.equal(check.name, `overrides.${inject.name}`);
    assert.deepEqual(check.rules, [
      { apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments', 'statefulsets', 'daemonsets', 'replicasets'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
      { apiGroups: ['batch'], apiVersions: ['v1'], resources: ['jobs', 'cronjobs'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
    ]);
    assert.equal(check.failurePolicy, 'Ignore');
    assert.equal(check.reinvocationPolicy, 'Never');
    assert.deepEqual([check.clientConfig, check.namespaceSelector, check.objectSelector, check.timeoutSeconds], [inject.clientConfig, inject.namespaceSelector, inject.objectSelector, inject.timeoutSeconds]);
  });

  test('its match condition (CEL, evaluated as the apiserver would): an offered prefix in the template, on an object nobody owns', () => {
    const [, check] = entries({ injections: [envoy(false)] });
    const [condition] = check.matchConditions;
    const env = kubernetesCelEnvironment();
    const holds = (kind: string, object: any) => env.evaluate(condition.expression, context(kind, object));
    assert.equal(holds('Deployment', deployment({ 'envoy.example.com/cpu-request': '5' })), true);
    assert.equal(holds('Deployment', deployment({ 'other.example.com/x': '1' })), false);
    assert.equal(holds('Deployment', { ...deployment({}), spec: { template: { spec: {} } } }), false, 'no annotations at all');
    assert.equal(holds('ReplicaSet', deployment({ 'envoy.example.com/cpu-request': '5' }, { ownerReferences: [{ kind: 'Deployment', name: 'web' }] })), false, "a Deployment's ReplicaSet: its controller wrote it");
    assert.equal(holds('CronJob', cronJob({ 'envoy.example.com/log-level': 'x' })), true);
    assert.equal(holds('CronJob', cronJob()), false);
  });

  test('kinds the injecting entry already sends are left out; none at all without a pod injection that enforces overrides', () => {
    const wait: InjectionProps = { name: 'wait', trigger: { type: 'always' }, targetKinds: ['Deployment', 'CronJob'], initContainers: [{ name: 'wait', image: 'busybox:1.36', securityContext: RESTRICTED }] };
    const [, check] = entries({ injections: [envoy(false), wait] });
    assert.deepEqual(check.rules.map((rule: any) => rule.resources), [['statefulsets', 'daemonsets', 'replicasets'], ['jobs']]);
    assert.equal(entries({ injections: [wait] }).length, 1);
    assert.equal(entries({ injections: [{ ...envoy(false), mode: 'audit' }] }).length, 1, 'audit mode applies no override');
    assert.equal(entries({ injections: [{ ...envoy(false), targetKinds: ['Deployment'] }] }).length, 1, 'a template injection reads its overrides where it is injected');
  });

  test('with revisions, each injecting entry has its own, on its revision\'s path', () => {
    const webhooks = entries({
      revisions: [{ name: 'r1', injections: [envoy(false)] }, { name: 'r2', injections: [envoy(false)] }],
      tags: [{ name: 'stable', revision: 'r1', default: true }, { name: 'canary', revision: 'r2' }],
    });
    const checks = webhooks.filter((webhook) => webhook.name.startsWith('overrides.'));
    const injecting = webhooks.filter((webhook) => !webhook.name.startsWith('overrides.') && !webhook.name.startsWith('unserved-'));
    assert.deepEqual(checks.map((webhook) => webhook.name), injecting.map((webhook) => `overrides.${webhook.name}`));
    for (const check of checks) {
      const twin = injecting.find((webhook) => check.name === `overrides.${webhook.name}`);
      assert.deepEqual([check.clientConfig.service.path, check.namespaceSelector, check.objectSelector], [twin.clientConfig.service.path, twin.namespaceSelector, twin.objectSelector]);
    }
  });
});
