// Overrides in the construct (issue 39): what an override offer adds to the output. Only an override
// that reads namespace defaults gives the webhook a token, a ServiceAccount and a ClusterRole of the
// two verbs its namespace watch calls, and egress to the apiserver; without one the output keeps no
// RBAC, no token and no egress. Every object is checked against the Kubernetes 1.32 schema.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SidecarInjectorPropsError } from '../../charts';
import type { InjectionProps } from '../../charts';
import { NAMESPACE_READER_RULES } from '../../charts/namespace-reader';
import { admissionPolicyViolations } from '../support/admission-policy-schemas';
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
