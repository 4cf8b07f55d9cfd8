// The readiness gate an injection with `readinessGate: true` adds, so `rollout --in-place` can take a
// pod out of its Services first. At CREATE the webhook adds the gate (once, whatever reinvocation
// does); on the pod's first status write (pods/status, the kubelet's) it adds the gate's condition as
// True, so a pod is never held back when no rollout runs: the webhook cannot set it at CREATE (the
// apiserver resets a new pod's status, see the e2e suite) and no controller runs. The admission
// policies compute the same stored objects.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Injection, initialReadinessCondition, injectionHash, readinessConditionType, resolveInjectorConfig } from '../../webhook/config';
import { InjectorConfigError } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { readinessConditionPolicySpec, shapePolicies } from '../../charts/admission-policy/injection-policy';
import { ADMISSION_POLICY_API_VERSIONS } from '../../charts/admission-policy/admission-policy-types';
import { foldedConditions, mutationGuards } from '../../charts/admission-policy/mutation-text';
import { admissionPolicyViolations } from '../support/admission-policy-schemas';
import { admitWithPolicies, kubernetesCelEnvironment, patchDataExpressions, type SimulatedPolicy } from '../support/admission-policy-simulator';
import { applyResponse, loadReview, podOf } from '../support/recorded-reviews';
import { findManifest, synthChart } from '../support/synth-helpers';

const PREFIX = 'sidecar-injector.io';
const GATE = readinessConditionType(PREFIX);
const envoy: Injection = { name: 'envoy', trigger: { type: 'always' }, targetKinds: ['Pod', 'Deployment'], readinessGate: true, containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.1' }] };
const agent: Injection = { name: 'agent', trigger: { type: 'labelSelector', matchLabels: { agent: 'on' } }, readinessGate: true, containers: [{ name: 'agent', image: 'example.com/agent:1' }] };
const plain: Injection = { name: 'plain', trigger: { type: 'always' }, env: [{ name: 'A', value: '1' }] };
const config = resolveInjectorConfig({ annotationPrefix: PREFIX, injections: [envoy, plain, agent] });

function statusRequest(pod: any): any {
  return {
    uid: 'status-write',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subResource: 'status',
    requestKind: { group: '', version: 'v1', kind: 'Pod' },
    requestResource: { group: '', version: 'v1', resource: 'pods' },
    requestSubResource: 'status',
    name: pod.metadata.name,
    namespace: 'default',
    operation: 'UPDATE',
    userInfo: { username: 'system:node:node-1' },
    object: pod,
    oldObject: pod,
  };
}

test('an injection with readinessGate adds one gate at CREATE, and reinvocation adds nothing', () => {
  const request = loadReview('pod-create-sleep').request;
  const labelled = structuredClone(request);
  labelled.object.metadata.labels = { ...labelled.object.metadata.labels, agent: 'on' };
  const once = applyResponse(labelled.object, evaluate(labelled, config).response) as any;
  assert.deepEqual(once.spec.readinessGates, [{ conditionType: GATE }], 'one gate for the two injections that ask for it');
  assert.deepEqual(once.spec.containers.map((c: any) => c.name).slice(-2), ['envoy', 'agent']);
  const again = evaluate({ ...labelled, object: once }, config);
  assert.deepEqual(again.patch, [], 'reinvocation finds nothing to do');
  // A gate the user wrote, of ours or another type, is kept and not doubled.
  const own = structuredClone(request);
  own.object.spec.readinessGates = [{ conditionType: 'example.com/lb' }, { conditionType: GATE }];
  assert.deepEqual((applyResponse(own.object, evaluate(own, config).response) as any).spec.readinessGates, [{ conditionType: 'example.com/lb' }, { conditionType: GATE }]);
  const other = structuredClone(request);
  other.object.spec.readinessGates = [{ conditionType: 'example.com/lb' }];
  assert.deepEqual((applyResponse(other.object, evaluate(other, config).response) as any).spec.readinessGates, [{ conditionType: 'example.com/lb' }, { conditionType: GATE }]);
  // Without readinessGate, no gate.
  const ungated = resolveInjectorConfig({ annotationPrefix: PREFIX, injections: [{ ...envoy, readinessGate: false }, plain] });
  assert.equal((applyResponse(request.object, evaluate(request, ungated).response) as any).spec.readinessGates, undefined);
  // A Deployment's template gets it, so its pods have it.
  const deployment = loadReview('deployment-create-frontend').request;
  assert.deepEqual(podOf(applyResponse(deployment.object, evaluate(deployment, config).response)).spec.readinessGates, [{ conditionType: GATE }]);
});

test('on a pod\'s status write, the gate\'s condition is added as True while it is missing, and never changed once there', () => {
  const base = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default' }, spec: { containers: [{ name: 'app', image: 'app:1' }], readinessGates: [{ conditionType: GATE }] } };
  const condition = initialReadinessCondition(PREFIX);
  const cases: [string, any, unknown][] = [
    ['conditions present', { ...base, status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] } }, [{ type: 'PodScheduled', status: 'True' }, condition]],
    ['no conditions yet', { ...base, status: { phase: 'Pending' } }, [condition]],
    ['no status', base, [condition]],
  ];
  for (const [what, pod, conditions] of cases) {
    const result = evaluate(statusRequest(pod), config);
    assert.deepEqual(result.decisions, [], `${what}: no injection decides a status write`);
    assert.deepEqual((applyResponse(pod, result.response) as any).status.conditions, conditions, what);
  }
  const held = { ...base, status: { conditions: [{ type: GATE, status: 'False', reason: 'InPlaceUpgrade' }] } };
  assert.equal(evaluate(statusRequest(held), config).response.patch, undefined, 'the CLI\'s False is left alone');
  const ungated = { ...base, spec: { containers: base.spec.containers }, status: {} };
  assert.equal(evaluate(statusRequest(ungated), config).response.patch, undefined, 'a pod without the gate is left alone');
  const disabled = resolveInjectorConfig({ annotationPrefix: PREFIX, enabled: false, injections: [envoy] });
  assert.deepEqual((applyResponse(base, evaluate(statusRequest(base), disabled).response) as any).status.conditions, [condition], 'even with the injector disabled: a gated pod must become Ready');
  // A status write never injects anything.
  const created = evaluate({ ...statusRequest({ ...base, spec: { containers: base.spec.containers } }), subResource: 'status' }, config);
  assert.equal(created.response.patch, undefined);
});

test('the admission policies store the same objects: at CREATE (one gate, in shared and separate mutations) and on the status write', () => {
  const named = (spec: any, name: string): SimulatedPolicy => ({ metadata: { name }, spec });
  // The pod policy in each of its forms: its conditions folded into its mutations and not reinvoked
  // (v1), as match conditions and reinvoked (v1alpha1), and reinvoked on v1 too where an injection's
  // trigger reads a label a later one adds (envoy, on the label plain adds: applied in the second run,
  // after agent's gate when agent applied, else with its own).
  const chained = resolveInjectorConfig({
    annotationPrefix: PREFIX,
    injections: [agent, { ...envoy, trigger: { type: 'labelSelector', matchLabels: { mesh: 'on' } } }, { ...plain, labels: { mesh: 'on' } }],
  });
  const forms: [string, typeof config, 'v1' | 'v1alpha1', 'Never' | 'IfNeeded'][] = [
    ['folded', config, 'v1', 'Never'],
    ['match conditions', config, 'v1alpha1', 'IfNeeded'],
    ['chained', chained, 'v1', 'IfNeeded'],
  ];
  for (const [form, formConfig, apiVersion, reinvocation] of forms) {
    const policies = shapePolicies(formConfig, formConfig.injections.map((i) => i.name), { failurePolicy: 'Fail', apiVersion }).map((policy) => named(policy.spec, `test.${policy.shape}`));
    const podPolicy = policies.find((policy) => policy.metadata.name === 'test.pods')!;
    assert.equal(podPolicy.spec.reinvocationPolicy, reinvocation, form);
    assert.equal(podPolicy.spec.mutations.length, 2, `${form}: envoy and agent both add the gate: not in one mutation`);
    for (const name of ['pod-create-sleep', 'pod-create-demoapp', 'deployment-create-frontend', 'statefulset-create-db']) {
      const request = loadReview(name).request;
      for (const labels of [{}, { agent: 'on' }]) {
        const object = structuredClone(request.object);
        podOf(object).metadata = { ...podOf(object).metadata, labels: { ...podOf(object).metadata?.labels, ...labels } };
        for (const gates of [undefined, [{ conditionType: 'example.com/lb' }], [{ conditionType: GATE }]]) {
          if (gates) podOf(object).spec.readinessGates = gates;
          const webhook = applyResponse(object, evaluate({ ...request, object }, formConfig).response);
          const policy = admitWithPolicies(policies, { ...request, object });
          assert.deepEqual(policy, webhook, `${form} ${name} ${JSON.stringify(labels)} gates ${JSON.stringify(gates)}: the policies' object (actual) differs from the webhook's (expected)`);
        }
      }
    }
  }
  const statusPolicy = named(readinessConditionPolicySpec(PREFIX), 'test.pod-status');
  const base = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default' }, spec: { containers: [{ name: 'app', image: 'app:1' }], readinessGates: [{ conditionType: GATE }] } };
  for (const pod of [{ ...base, status: { conditions: [{ type: 'PodScheduled', status: 'True' }] } }, { ...base, status: {} }, base, { ...base, status: { conditions: [{ type: GATE, status: 'False' }] } }, { ...base, spec: { containers: base.spec.containers }, status: {} }]) {
    const request = statusRequest(pod);
    assert.deepEqual(admitWithPolicies([statusPolicy], request), applyResponse(pod, evaluate(request, config).response), JSON.stringify(pod));
  }
});

test('readinessGate is validated, hashed only when set, and synthesized as a second webhook entry or a pod-status policy', () => {
  assert.throws(() => resolveInjectorConfig({ injections: [{ ...envoy, readinessGate: 'yes' }] }), (error: unknown) => error instanceof InjectorConfigError && /injections\[0\]\.readinessGate: must be true or false, got string "yes"/.test(error.message));
  assert.throws(() => resolveInjectorConfig({ injections: [{ ...plain, readinessGate: true }] }), /injections\[0\]\.readinessGate: the injection adds no container whose image rollout --in-place could replace/);
  const { readinessGate: _, ...ungated } = envoy;
  assert.equal(injectionHash({ ...ungated, readinessGate: false }), injectionHash(ungated), 'false is the default: the same hash');
  assert.notEqual(injectionHash(envoy), injectionHash(ungated), 'switching it on marks the pods injected before as outdated');

  const webhook = synthChart({ injections: [envoy], podSecurity: 'privileged' }).manifests;
  const configuration = findManifest(webhook, 'MutatingWebhookConfiguration');
  assert.deepEqual(configuration.webhooks.map((entry: any) => entry.name), ['inject.sidecar-injector.sidecar-injector.svc', 'sidecars-ready.sidecar-injector.sidecar-injector.svc']);
  const ready = configuration.webhooks[1];
  assert.deepEqual(ready.rules, [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods/status'], operations: ['UPDATE'], scope: 'Namespaced' }]);
  assert.equal(ready.failurePolicy, 'Fail');
  assert.deepEqual(ready.matchConditions.map((condition: any) => condition.name), ['readiness-condition-missing']);
  assert.deepEqual([ready.namespaceSelector, ready.objectSelector], [configuration.webhooks[0].namespaceSelector, configuration.webhooks[0].objectSelector]);
  const without = findManifest(synthChart({ injections: [ungated], podSecurity: 'privileged' }).manifests, 'MutatingWebhookConfiguration');
  assert.equal(without.webhooks.length, 1, 'no gate, no second entry');

  const policies = synthChart({ injections: [envoy], podSecurity: 'privileged', backend: 'admissionPolicy' }).manifests.filter((m) => m.kind.startsWith('MutatingAdmissionPolicy'));
  assert.deepEqual(policies.map((m) => `${m.kind} ${m.metadata.name}`).sort(), [
    'MutatingAdmissionPolicy sidecar-injector.sidecar-injector.pod-status',
    'MutatingAdmissionPolicy sidecar-injector.sidecar-injector.pods',
    'MutatingAdmissionPolicy sidecar-injector.sidecar-injector.workloads',
    'MutatingAdmissionPolicyBinding sidecar-injector.sidecar-injector.pod-status',
    'MutatingAdmissionPolicyBinding sidecar-injector.sidecar-injector.pods',
    'MutatingAdmissionPolicyBinding sidecar-injector.sidecar-injector.workloads',
  ]);
  const status = policies.find((m) => m.metadata.name.endsWith('.pod-status') && m.kind === 'MutatingAdmissionPolicy')!;
  assert.deepEqual(status.spec.matchConditions, ready.matchConditions, 'the same condition as the webhook entry');
  assert.equal(status.spec.failurePolicy, 'Fail');
});

test('the gated policies validate against each admissionregistration version\'s schema, and their CEL type-checks', () => {
  const env = kubernetesCelEnvironment();
  for (const apiVersion of ADMISSION_POLICY_API_VERSIONS) {
    const objects = synthChart({ injections: [envoy, plain, agent], podSecurity: 'privileged', backend: 'admissionPolicy', admissionPolicyApiVersion: apiVersion }).manifests;
    for (const object of objects) assert.deepEqual(admissionPolicyViolations(object), [], `${object.kind} ${object.metadata.name} violates the ${apiVersion} schema`);
    for (const policy of objects.filter((o) => o.kind === 'MutatingAdmissionPolicy')) {
      const expressions = [
        ...(policy.spec.matchConditions ?? []),
        ...policy.spec.mutations.flatMap((mutation: any) => foldedConditions(mutation.jsonPatch.expression) ?? []),
        ...patchDataExpressions(policy.spec).flatMap((data, index) => [
          ...mutationGuards(policy.spec.mutations[index].jsonPatch.expression).flat(),
          { name: `mutations[${index}]`, expression: data },
        ]),
      ];
      for (const { name, expression } of expressions) {
        const result = env.check(expression);
        assert.equal(result.valid, true, `${apiVersion} ${policy.metadata.name} ${name}: ${(result as any).error?.message}`);
      }
    }
  }
});
