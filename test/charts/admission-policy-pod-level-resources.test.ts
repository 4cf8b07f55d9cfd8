// The policy backend keeps pods with pod-level resources valid as the webhook does: the website's
// pod-level-resources pod and its variants, admitted through the synthesized MutatingAdmissionPolicies
// (evaluated with a JavaScript CEL implementation), give the object the webhook's patch gives, and the
// apiserver's rules (test/support/pod-level-resources.ts) accept it, with 1.36's and 1.37's defaulting.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { Injection, resolveInjectorConfig } from '../../webhook/config';
import { mutate } from '../../webhook/engine';
import { POLICY_TEST_INJECTIONS, injectionPoliciesOf } from '../support/admission-policy-config';
import { admitWithPolicies } from '../support/admission-policy-simulator';
import { admittedSpec, websitePod } from '../support/pod-level-resources';
import { applyResponse, loadReview, podOf } from '../support/recorded-reviews';

type Json = Record<string, any>;

const VARIANTS: [string, Json, Json[]?][] = [
  ['the website\'s requests and limits', { limits: { cpu: '1', memory: '200Mi' }, requests: { cpu: '1', memory: '100Mi' } }],
  ['requests only', { requests: { cpu: '1', memory: '100Mi' } }],
  ['limits only', { limits: { cpu: '1', memory: '200Mi' } }],
  ['a native sidecar of its own', { requests: { cpu: '1', memory: '256Mi' }, limits: { cpu: '1', memory: '256Mi' } }, [
    { name: 'log-shipper', image: 'busybox', restartPolicy: 'Always', resources: { requests: { memory: '64Mi' }, limits: { memory: '128Mi' } } },
  ]],
  ['hugepages and memory', { requests: { memory: '100Mi', 'hugepages-2Mi': '4Mi' }, limits: { memory: '200Mi', 'hugepages-2Mi': '4Mi' } }],
];

function requestFor(pod: Json, annotations: Record<string, string>): any {
  const request = structuredClone(loadReview('pod-create-sleep').request);
  request.object = { ...pod, metadata: { ...pod.metadata, annotations } };
  request.name = pod.metadata.name;
  request.namespace = 'pod-resources-example';
  return request;
}

const CONFIGS: [string, Injection[], Record<string, string>][] = [];
for (const podResources of ['add', 'share'] as const) {
  for (const nativeSidecars of ['never', 'always'] as const) {
    const withPolicy = (injection: Injection) => (injection.containers?.length ? { ...injection, podResources, nativeSidecars } : { ...injection, podResources });
    CONFIGS.push([`the default app, podResources ${podResources}, nativeSidecars ${nativeSidecars}, nginx requested`, DEFAULT_INJECTIONS.map(withPolicy), { 'sidecar-injector-webhook.morven.me/inject': 'true' }]);
  }
  CONFIGS.push([`the policy tests' injections, podResources ${podResources}`, POLICY_TEST_INJECTIONS.map((injection) => ({ ...injection, podResources })), {}]);
}

describe('pod-level resources on the policy backend', () => {
  for (const [what, injections, annotations] of CONFIGS) {
    const config = resolveInjectorConfig({ annotationPrefix: 'sidecar-injector.io', injections });
    const policies = injectionPoliciesOf(config);
    for (const [variant, resources, initContainers] of VARIANTS) {
      test(`${what}: a pod with ${variant} is stored as the webhook makes it, and valid`, () => {
        const request = requestFor(websitePod(resources, initContainers, { name: 'pod-resources-demo' }), annotations);
        const webhookObject = applyResponse(request.object, mutate(request, config));
        const policyObject = admitWithPolicies(policies, request);
        assert.deepEqual(policyObject.spec, webhookObject.spec, 'the policies\' pod (actual) differs from the webhook\'s (expected)');
        const spec = podOf(policyObject).spec;
        assert.ok(spec.containers.length + (spec.initContainers?.length ?? 0) > websitePod().spec.containers.length + (initContainers?.length ?? 0), 'something was injected');
        for (const version of ['1.36', '1.37'] as const) {
          const { violations, spec } = admittedSpec(request.object.spec, version, (decoded) => podOf(admitWithPolicies(policies, { ...request, object: { ...request.object, spec: decoded } })).spec);
          assert.deepEqual(violations, [], `on ${version}: spec.resources ${JSON.stringify(spec.resources)}, containers ${JSON.stringify(spec.containers.map((c: Json) => [c.name, c.resources]))}`);
        }
        const twice = admitWithPolicies(policies, { ...request, object: policyObject });
        assert.deepEqual(twice, policyObject, 'a second admission changed the pod');
      });
    }
  }
});

describe('the QoS class of a pod-level Guaranteed pod, injection after injection, on the policy backend', () => {
  test('an earlier injection without preserve-guaranteed lowers the class, so a later preserve-guaranteed one keeps its limits, as the webhook does', () => {
    const proxy = (name: string, qos: 'warn' | 'preserve-guaranteed', resources: Json): Injection => ({ name, trigger: { type: 'always' }, qos, containers: [{ name, image: 'proxy', resources }] });
    for (const [what, injections] of [
      ['a Burstable-shaped sidecar first', [proxy('first', 'warn', { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } }), proxy('second', 'preserve-guaranteed', { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '64Mi' } })]],
      ['a Guaranteed-shaped sidecar first', [proxy('first', 'warn', { requests: { cpu: '100m', memory: '64Mi' } }), proxy('second', 'preserve-guaranteed', { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '64Mi' } })]],
    ] as [string, Injection[]][]) {
      const config = resolveInjectorConfig({ annotationPrefix: 'sidecar-injector.io', injections });
      const request = requestFor(websitePod({ requests: { cpu: '1', memory: '200Mi' }, limits: { cpu: '1', memory: '200Mi' } }, undefined, { name: 'pod-resources-demo' }), {});
      const webhookObject = applyResponse(request.object, mutate(request, config));
      assert.deepEqual(admitWithPolicies(injectionPoliciesOf(config), request).spec, webhookObject.spec, `${what}: the policies' pod (actual) differs from the webhook's (expected)`);
    }
  });
});
