// Overrides on the policy backend (issue 39): the synthesized MutatingAdmissionPolicies choose each
// offered field's value as the webhook's engine does (the pod's annotation if good, else the
// namespace's from `namespaceObject`, else the configured value; a request never above its limit), so
// the policies store the object the webhook's patch gives for every case below, evaluated with the
// JavaScript CEL implementation and Kubernetes' quantity library (test/support/admission-policy-simulator.ts).
// Not yet run against a real kube-apiserver (npm run e2e): see the note in docs/overrides.md.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Injection, resolveInjectorConfig } from '../../webhook/config';
import { type AdmissionRequest, mutate } from '../../webhook/engine';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { configPolicyLimitations, injectionPoliciesOf } from '../support/admission-policy-config';
import { type SimulatedRequest, admitWithPolicies } from '../support/admission-policy-simulator';
import { envoyWithOverrides } from '../support/override-fixtures';
import { applyResponse } from '../support/recorded-reviews';

const envoy = (extra: Partial<Injection> = {}) => envoyWithOverrides({ targetKinds: ['Pod', 'Deployment'], ...extra });

const CONFIGS = {
  plain: resolveInjectorConfig({ injections: [envoy()] }),
  'preserve-guaranteed': resolveInjectorConfig({ injections: [envoy({ qos: 'preserve-guaranteed' })] }),
  'native sidecar, two injections sharing a mutation': resolveInjectorConfig({
    injections: [envoy({ nativeSidecars: 'always' }), { name: 'labels', trigger: { type: 'always' }, labels: { mesh: 'on' } }],
  }),
};

const POD_CASES: [string, Record<string, string>][] = [
  ['no annotation', {}],
  ['a good cpu request', { 'envoy.example.com/cpu-request': '250m' }],
  ['a cpu request above the maximum', { 'envoy.example.com/cpu-request': '3' }],
  ['an unparsable cpu request', { 'envoy.example.com/cpu-request': 'lots' }],
  ['a negative cpu request', { 'envoy.example.com/cpu-request': '-1' }],
  ['an exponent', { 'envoy.example.com/cpu-request': '1e3' }],
  ['zero', { 'envoy.example.com/cpu-request': '0' }],
  ['surrounding spaces', { 'envoy.example.com/cpu-request': ' 250m' }],
  ['a request above the limit', { 'envoy.example.com/cpu-request': '1500m' }],
  ['a limit below the request', { 'envoy.example.com/cpu-limit': '50m' }],
  ['both, inconsistent', { 'envoy.example.com/cpu-request': '2', 'envoy.example.com/cpu-limit': '500m' }],
  ['both, raised together', { 'envoy.example.com/cpu-request': '2', 'envoy.example.com/cpu-limit': '3' }],
  ['a memory request below the minimum', { 'envoy.example.com/memory-request': '1Mi' }],
  ['a good memory request and log level', { 'envoy.example.com/memory-request': '200Mi', 'envoy.example.com/log-level': 'debug' }],
  ['a log level not allowed', { 'envoy.example.com/log-level': 'trace' }],
  ['a key no override offers', { 'envoy.example.com/memory-limit': '1Gi' }],
  ['a very long value', { 'envoy.example.com/cpu-request': '1'.repeat(5000) }],
];
const NAMESPACE_CASES: [string, Record<string, string> | undefined][] = [
  ['no namespace annotations', undefined],
  ['namespace defaults', { 'envoy.example.com/memory-request': '256Mi', 'envoy.example.com/log-level': 'warn', 'envoy.example.com/cpu-request': '700m' }],
  ['bad namespace defaults', { 'envoy.example.com/memory-request': '9Gi', 'envoy.example.com/log-level': 'loud' }],
];
const GUARANTEED_APP = { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } };

function pod(annotations: Record<string, string>, guaranteed: boolean): any {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop', annotations }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1', ...(guaranteed ? { resources: GUARANTEED_APP } : {}) }] } };
}

function deployment(annotations: Record<string, string>, own: Record<string, string> = {}): any {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop', annotations: own },
    spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' }, annotations }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] } } },
  };
}

function compare(config: (typeof CONFIGS)[keyof typeof CONFIGS], object: any, namespaceAnnotations: Record<string, string> | undefined, what: string): any {
  // createRequestFor always sets the resource the simulator's SimulatedRequest requires.
  const request = createRequestFor(object, 'shop', 'u') as AdmissionRequest & SimulatedRequest;
  const webhook = applyResponse(structuredClone(object), mutate(request, config, { namespaceAnnotations: namespaceAnnotations ?? {} }));
  const namespaceObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', ...(namespaceAnnotations ? { annotations: namespaceAnnotations } : {}) } };
  for (const apiVersion of ['v1', 'v1alpha1'] as const) {
    const policies = injectionPoliciesOf(config, 'Fail', apiVersion);
    const policy = admitWithPolicies(policies, { ...request, namespaceObject, object: structuredClone(object) });
    assert.deepEqual(policy, webhook, `${what} (${apiVersion}): the policies' object (actual) differs from the webhook's (expected)`);
  }
  return webhook;
}

describe('the policies choose override values as the webhook does', () => {
  test('an injection with overrides is a policy: no limitation left', () => {
    for (const config of Object.values(CONFIGS)) assert.deepEqual(configPolicyLimitations(config), []);
  });

  for (const [label, config] of Object.entries(CONFIGS)) {
    test(`${label}: every pod case in every namespace case`, () => {
      const seen = new Set<string>();
      for (const [podCase, annotations] of POD_CASES) {
        for (const [namespaceCase, namespaceAnnotations] of NAMESPACE_CASES) {
          for (const guaranteed of [false, true]) {
            const out = compare(config, pod(annotations, guaranteed), namespaceAnnotations, `${podCase}, ${namespaceCase}${guaranteed ? ', Guaranteed pod' : ''}`);
            const injected = [...out.spec.containers, ...(out.spec.initContainers ?? [])].find((c: any) => c.name === 'envoy');
            seen.add(JSON.stringify([injected.resources, injected.env]));
          }
        }
      }
      // Not vacuous: the cases gave many different containers.
      assert.ok(seen.size >= 6, `${seen.size} distinct injected containers`);
    });
  }

  test("a Deployment: its template's annotation, its own, and the template's winning on a clash", () => {
    const config = CONFIGS.plain;
    compare(config, deployment({ 'envoy.example.com/cpu-request': '750m' }), undefined, 'template annotation');
    compare(config, deployment({}, { 'envoy.example.com/cpu-request': '600m' }), undefined, "the Deployment's own annotation");
    const out = compare(config, deployment({ 'envoy.example.com/cpu-request': '750m' }, { 'envoy.example.com/cpu-request': '600m' }), { 'envoy.example.com/memory-request': '256Mi' }, 'both, with a namespace default');
    assert.deepEqual(out.spec.template.spec.containers[1].resources.requests, { cpu: '750m', memory: '256Mi' });
  });

  test('admitted again, the policies change nothing', () => {
    const config = CONFIGS.plain;
    const request = createRequestFor(pod({ 'envoy.example.com/cpu-request': '250m' }, false), 'shop', 'u') as AdmissionRequest & SimulatedRequest;
    const namespaceObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop', annotations: { 'envoy.example.com/memory-request': '256Mi' } } };
    const policies = injectionPoliciesOf(config);
    const once = admitWithPolicies(policies, { ...request, namespaceObject });
    assert.deepEqual(admitWithPolicies(policies, { ...request, namespaceObject, object: once }), once);
  });
});
