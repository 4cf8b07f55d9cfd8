// Bad override values on the policy backend (issue 46): a ValidatingAdmissionPolicy per template shape,
// bound with validationActions [Warn], says what the webhook says, in its words, where it says it: at a
// pod's admission when an injection was applied to it, at a workload's when one was applied to its
// template, and at a workload's whose pods an injection of pods will reach (the template judged as
// those pods). Compared with the webhook's answer for every case of the override tests, evaluated with
// the JavaScript CEL implementation and Kubernetes' quantity library; the node suite shows the
// apiserver's own warnings (test/e2e-node/overrides.e2e-node.test.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Injection, type ResolvedInjectorConfig, resolveInjectorConfig } from '../../webhook/config';
import { type AdmissionRequest, evaluate } from '../../webhook/engine';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { overrideWarningPolicies } from '../../charts/admission-policy/override-warning-policy';
import { injectionPoliciesOf } from '../support/admission-policy-config';
import { type SimulatedPolicy, type SimulatedRequest, admitWithPolicies, failedValidations } from '../support/admission-policy-simulator';
import { assertValidManifest } from '../support/openapi-validator';
import { ALL_OFFERS, envoyWithOverrides } from '../support/override-fixtures';
import { applyResponse } from '../support/recorded-reviews';

const wait: Injection = { name: 'wait', trigger: { type: 'always' }, targetKinds: ['Deployment'], initContainers: [{ name: 'wait', image: 'busybox:1.36' }] };
const CONFIGS: Record<string, ResolvedInjectorConfig> = {
  'envoy in pods': resolveInjectorConfig({ injections: [envoyWithOverrides(), wait] }),
  'envoy in pods and Deployment templates': resolveInjectorConfig({ injections: [envoyWithOverrides({ targetKinds: ['Pod', 'Deployment'] })] }),
  'envoy in Deployment templates only': resolveInjectorConfig({ injections: [envoyWithOverrides({ targetKinds: ['Deployment'] })] }),
  'envoy in pods labelled mesh=on': resolveInjectorConfig({ injections: [envoyWithOverrides({ trigger: { type: 'labelSelector', matchLabels: { mesh: 'on' } } })] }),
};

const VALUE_CASES: [string, Record<string, string>][] = [
  ['no annotation', {}],
  ['a good cpu request', { 'envoy.example.com/cpu-request': '250m' }],
  ['a cpu request above the maximum', { 'envoy.example.com/cpu-request': '5' }],
  ['an unparsable cpu request', { 'envoy.example.com/cpu-request': 'lots' }],
  ['zero', { 'envoy.example.com/cpu-request': '0' }],
  ['a request above the limit', { 'envoy.example.com/cpu-request': '1500m' }],
  ['a limit below the request', { 'envoy.example.com/cpu-limit': '50m' }],
  ['both, inconsistent', { 'envoy.example.com/cpu-request': '2', 'envoy.example.com/cpu-limit': '500m' }],
  ['a memory request below the minimum', { 'envoy.example.com/memory-request': '1Mi' }],
  ['a log level not allowed', { 'envoy.example.com/log-level': 'trace' }],
  ['a key no override offers', { 'envoy.example.com/memory-limit': '1Gi' }],
  ['a long value', { 'envoy.example.com/cpu-request': '9'.repeat(100) }],
  ['opted out', { 'envoy.example.com/cpu-request': '5', 'sidecar-injector.io/inject': 'false' }],
];
const NAMESPACE_CASES: [string, Record<string, string> | undefined][] = [
  ['no namespace annotations', undefined],
  ['good namespace defaults', { 'envoy.example.com/memory-request': '256Mi', 'envoy.example.com/log-level': 'warn' }],
  ['bad namespace defaults', { 'envoy.example.com/memory-request': '9Gi', 'envoy.example.com/log-level': 'loud' }],
];

function objectOf(kind: string, annotations: Record<string, string>, labels: Record<string, string>): any {
  const template = { metadata: { labels: { app: 'web', ...labels }, annotations }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] } };
  if (kind === 'Pod') return { apiVersion: 'v1', kind, metadata: { name: 'web', namespace: 'shop', ...template.metadata }, spec: template.spec };
  if (kind === 'CronJob') return { apiVersion: 'batch/v1', kind, metadata: { name: 'web', namespace: 'shop' }, spec: { schedule: '@daily', jobTemplate: { spec: { template: { ...template, spec: { ...template.spec, restartPolicy: 'Never' } } } } } };
  return { apiVersion: 'apps/v1', kind, metadata: { name: 'web', namespace: 'shop' }, spec: { selector: { matchLabels: { app: 'web' } }, template } };
}

/** The override warnings (the webhook's other warnings, such as QoS, are not this policy's). */
const aboutOverrides = (warning: string) => / ignored[ :]/.test(warning);

/** The webhook's cut at 256 characters is its own; the apiserver keeps a policy's longer message. */
const comparable = (warning: string) => (warning.length >= 256 && warning.endsWith('...') ? warning.slice(0, 200) : warning.length > 256 ? warning.slice(0, 200) : warning);

function compare(config: ResolvedInjectorConfig, request: AdmissionRequest & SimulatedRequest, namespaceAnnotations: Record<string, string> | undefined, what: string): string[] {
  const webhook = (evaluate(request, config, { namespaceAnnotations: namespaceAnnotations ?? {} }).response.warnings ?? []).filter(aboutOverrides);
  const names = config.injections.map((injection) => injection.name);
  const validating: SimulatedPolicy[] = overrideWarningPolicies(config, names).map((policy) => ({ metadata: { name: `test.${policy.shape}-overrides` }, spec: policy.spec }));
  const namespaceObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', ...(namespaceAnnotations ? { annotations: namespaceAnnotations } : {}) } };
  const admitted = admitWithPolicies(injectionPoliciesOf(config), { ...request, namespaceObject, object: structuredClone(request.object) });
  const policies = validating.flatMap((policy) => failedValidations(policy, { ...request, namespaceObject }, admitted));
  assert.deepEqual(policies.map(comparable).sort(), webhook.map(comparable).sort(), `${what}: the policies' warnings (actual) vs the webhook's (expected)`);
  return webhook;
}

describe("the policies warn of bad override values where and as the webhook warns", () => {
  for (const [name, config] of Object.entries(CONFIGS)) {
    test(`${name}: pods, Deployments (CREATE and UPDATE), StatefulSets and CronJobs`, () => {
      let warned = 0;
      for (const kind of ['Pod', 'Deployment', 'StatefulSet', 'CronJob']) {
        for (const [valueCase, annotations] of VALUE_CASES) {
          for (const [namespaceCase, namespaceAnnotations] of NAMESPACE_CASES) {
            for (const labels of [{}, { mesh: 'on' }] as Record<string, string>[]) {
              const object = objectOf(kind, annotations, labels);
              const what = `${kind}, ${valueCase}, ${namespaceCase}, labels ${JSON.stringify(labels)}`;
              const request = createRequestFor(object, 'shop', 'u') as AdmissionRequest & SimulatedRequest;
              warned += compare(config, request, namespaceAnnotations, `${what} (CREATE)`).length;
              if (kind === 'Pod') continue;
              // An UPDATE of what the webhook stored: a template injected before is not read again.
              const stored = applyResponse(structuredClone(object), evaluate(request, config, { namespaceAnnotations: namespaceAnnotations ?? {} }).response);
              const update = { ...createRequestFor(stored, 'shop', 'v'), operation: 'UPDATE', oldObject: structuredClone(stored) } as AdmissionRequest & SimulatedRequest;
              warned += compare(config, update, namespaceAnnotations, `${what} (UPDATE)`).length;
            }
          }
        }
      }
      assert.ok(warned > 20, `the webhook warned ${warned} times: the comparisons did not pass vacuously`);
    });
  }

  test('a ReplicaSet its Deployment made (an owner) is not judged: the Deployment was', () => {
    const config = CONFIGS['envoy in pods'];
    const replicaSet = objectOf('ReplicaSet', { 'envoy.example.com/cpu-request': '5' }, {});
    replicaSet.metadata.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u', controller: true }];
    const [policy] = overrideWarningPolicies(config, ['envoy']).filter((candidate) => candidate.shape === 'workloads');
    const request = createRequestFor(replicaSet, 'shop', 'r') as AdmissionRequest & SimulatedRequest;
    assert.deepEqual(failedValidations({ metadata: { name: 'test' }, spec: policy.spec }, request, replicaSet), []);
    delete replicaSet.metadata.ownerReferences;
    assert.equal(failedValidations({ metadata: { name: 'test' }, spec: policy.spec }, request, replicaSet).length, 1);
  });

  test('every variable an expression reads is bound, before it (the apiserver compiles each expression against the variables declared)', () => {
    const configs = [...Object.values(CONFIGS), resolveInjectorConfig({ injections: [envoyWithOverrides({}, ALL_OFFERS.map(({ fromNamespace: _, ...offer }) => offer as typeof offer))] })];
    for (const config of configs) {
      for (const policy of overrideWarningPolicies(config, config.injections.map((injection) => injection.name))) {
        const declared = new Set<string>();
        const check = (expression: string, where: string) => {
          for (const [, name] of expression.matchAll(/\bvariables\.([A-Za-z_][A-Za-z0-9_]*)/g)) assert.ok(declared.has(name), `${policy.shape} ${where}: variables.${name} is not bound before it`);
        };
        for (const variable of policy.spec.variables ?? []) {
          check(variable.expression, `variable ${variable.name}`);
          declared.add(variable.name);
        }
        policy.spec.validations.forEach((validation, index) => {
          check(validation.expression, `validations[${index}].expression`);
          check(validation.messageExpression ?? '', `validations[${index}].messageExpression`);
        });
      }
    }
  });

  test('the policies are valid admissionregistration.k8s.io/v1 objects (Kubernetes 1.32 schema)', () => {
    for (const config of Object.values(CONFIGS)) {
      for (const policy of overrideWarningPolicies(config, config.injections.map((injection) => injection.name))) {
        const object = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: `x.${policy.shape}-overrides` }, spec: policy.spec };
        assertValidManifest(object);
      }
    }
  });
});
