// The policy backend computes what the webhook computes: every recorded AdmissionReview's object, and
// variants of it for each trigger, admitted once through the webhook's engine and once through the
// synthesized MutatingAdmissionPolicies (evaluated with a JavaScript CEL implementation), give the same
// object. The e2e suite (npm run e2e) checks the same against a real kube-apiserver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Injection, resolveInjectorConfig } from '../../webhook/config';
import { mutate } from '../../webhook/engine';
import { POLICY_TEST_INJECTIONS, configPolicyLimitations, injectionPoliciesOf, injectionsOfPolicy, triggerVariants } from '../support/admission-policy-config';
import { SimulatedPolicy, admitWithPolicies, evaluateGuardCondition, evaluatePolicy, guardContext } from '../support/admission-policy-simulator';
import { mutationGuards } from '../../charts/admission-policy/mutation-text';
import { applyResponse, loadReview, podOf, reviewNames } from '../support/recorded-reviews';

const PREFIX = 'sidecar-injector.io';

const config = resolveInjectorConfig({ annotationPrefix: PREFIX, injections: POLICY_TEST_INJECTIONS });
const policies = injectionPoliciesOf(config);
// As emitted for Kubernetes 1.32 and 1.33: the pod policy keeps its match conditions and is reinvoked.
const alphaPolicies = injectionPoliciesOf(config, 'Fail', 'v1alpha1');

test('the policy backend renders every test injection (none needs the webhook)', () => {
  assert.deepEqual(configPolicyLimitations(config), []);
});

/** Every injection name the status annotation of an admitted object lists. */
const injectedSeen = new Set<string>();

for (const name of reviewNames()) {
  test(`${name}: the policies store the object the webhook's patch gives, for every trigger variant`, () => {
    const review = loadReview(name);
    const request = review.request;
    if (!request.object) return;
    for (const [label, object] of triggerVariants(request.object)) {
      const webhookObject = applyResponse(object, mutate({ ...request, object }, config));
      const policyObject = admitWithPolicies(policies, { ...request, object });
      assert.deepEqual(policyObject, webhookObject, `${name} (${label}): the policies' object (actual) differs from the webhook's (expected)`);
      assert.deepEqual(admitWithPolicies(alphaPolicies, { ...request, object }), webhookObject, `${name} (${label}): v1alpha1 policies (actual) vs the webhook (expected)`);
      const status = podOf(policyObject).metadata?.annotations?.[`${PREFIX}/status`];
      for (const injected of status?.split(',') ?? []) injectedSeen.add(injected);
    }
  });
}

test('the comparisons above injected every test injection somewhere (none of them passed vacuously)', () => {
  assert.deepEqual([...injectedSeen].sort(), config.injections.map((injection) => injection.name).sort());
});

test('a second admission through the policies changes nothing (status annotation and reinvocation)', () => {
  for (const name of reviewNames()) {
    const request = loadReview(name).request;
    if (!request.object) continue;
    for (const [label, object] of triggerVariants(request.object)) {
      for (const [version, set] of [['v1', policies], ['v1alpha1', alphaPolicies]] as const) {
        const once = admitWithPolicies(set, { ...request, object });
        const twice = admitWithPolicies(set, { ...request, object: once });
        assert.deepEqual(twice, once, `${name} (${label}, ${version}): admitting the injected object again changed it`);
      }
    }
  }
});

test('one policy per template shape applies the injections in config order, sharing a mutation where nothing one does is read by a later one', () => {
  assert.deepEqual(policies.map((policy) => policy.metadata.name), ['test.pods', 'test.workloads', 'test.cronjobs']);
  const pods = policies[0];
  const podInjections = config.injections.filter((injection) => injection.targetKinds.includes('Pod')).map((injection) => injection.name);
  assert.deepEqual(injectionsOfPolicy(pods), podInjections);
  assert.deepEqual(
    pods.spec.mutations.map((mutation: any) => injectionsOfPolicy({ spec: { mutations: [mutation] } })),
    [
      // Each computes its part from the object as admitted; where an earlier one's change matters (the
      // label debug adds that triggers debug-chained, the sidecars it placed first, a container that
      // ends a Guaranteed class) it reads the earlier part.
      ['envoy', 'nginx-sidecar', 'probe-defaults', 'debug', 'tier-limits', 'log-shipper', 'mesh-first', 'token-first', 'debug-chained', 'gpu-limits'],
    ],
  );
  const chainedGuard = mutationGuards(pods.spec.mutations[0].jsonPatch.expression)[injectionsOfPolicy(pods).indexOf('debug-chained')];
  const trigger = chainedGuard.find((condition) => condition.name === 'trigger')?.expression ?? '';
  const debugPart = `m${injectionsOfPolicy(pods).indexOf('debug')}`;
  assert.ok(trigger.includes(`${debugPart}[1].exists(p, string(p.path) == "/metadata/labels/debug.example.com~1enabled")`), `debug-chained's trigger reads debug's labels (${debugPart}[1]): ${trigger}`);
});

test('an injection left out is explained by a named condition: the policy\'s, or its own guard in its mutation', () => {
  const request = loadReview('pod-create-sleep').request;
  const pods = policies.find((policy) => policy.metadata.name === 'test.pods')!;
  const debugIndex = pods.spec.mutations.findIndex((mutation: any) => injectionsOfPolicy({ spec: { mutations: [mutation] } }).includes('debug'));
  const debugGuard = mutationGuards(pods.spec.mutations[debugIndex].jsonPatch.expression)[injectionsOfPolicy({ spec: { mutations: [pods.spec.mutations[debugIndex]] } }).indexOf('debug')];
  // A shared mutation's guards read the values it binds first (the status names, the pod's labels and annotations).
  const context = (object: any) => guardContext(pods, { ...request, namespace: request.namespace ?? '' }, object);
  const failing = (object: any) => debugGuard.find((condition) => evaluateGuardCondition(condition.expression, context(object)) !== true)?.name;
  const debugLabel = (patch: { path: string }[]) => patch.some((op) => op.path === '/metadata/labels/debug.example.com~1enabled');
  const asRecorded = evaluatePolicy(pods, request, request.object);
  assert.equal(asRecorded.mutations[debugIndex].skippedBy, undefined, 'the pod policy\'s own conditions hold');
  assert.equal(failing(request.object), 'trigger', 'debug is not requested');
  assert.equal(debugLabel(asRecorded.mutations[debugIndex].patch), false);
  // The pod policy has no match conditions: its mutation runs, each injection's guard fails, and it adds nothing.
  const alreadyInjected = evaluatePolicy(pods, request, asRecorded.object);
  assert.deepEqual(alreadyInjected.mutations.map((mutation) => mutation.patch), [[]], 'admitting the injected pod again: no injection applies');
  const guards = mutationGuards(pods.spec.mutations[0].jsonPatch.expression);
  // A guard may read an earlier injection's part (m<i>) too: each is empty here, as every guard fails.
  const noParts = Object.fromEntries(injectionsOfPolicy(pods).map((_, index) => [`m${index}`, [[], [], []]]));
  const again = { ...noParts, ...context(asRecorded.object) };
  const failed = Object.fromEntries(injectionsOfPolicy(pods).map((name, index) => [name, guards[index].find((condition) => evaluateGuardCondition(condition.expression, again) !== true)?.name]));
  assert.equal(failed.envoy, 'not-already-injected', JSON.stringify(failed));
  assert.ok(Object.values(failed).every((name) => name !== undefined), `every injection's guard names why it is left out: ${JSON.stringify(failed)}`);
  const optedOut = structuredClone(request.object);
  optedOut.metadata.annotations = { [`${PREFIX}/inject`]: 'false' };
  assert.deepEqual(evaluatePolicy(pods, request, optedOut).mutations.map((mutation) => [mutation.skippedBy, mutation.patch]), [['not-opted-out', []]]);
  // The workload policies keep them: the apiserver does not call the policy for a workload nothing applies to.
  const deployment = loadReview('deployment-create-frontend').request;
  const workloads = policies.find((policy) => policy.metadata.name === 'test.workloads')!;
  const injectedDeployment = evaluatePolicy(workloads, deployment, deployment.object);
  assert.equal(injectedDeployment.skippedBy, undefined, 'envoy applies to the Deployment');
  const deploymentAgain = evaluatePolicy(workloads, deployment, injectedDeployment.object);
  assert.equal(deploymentAgain.skippedBy, 'an-injection-applies', 'admitting the injected Deployment again: no injection applies');
  assert.deepEqual(deploymentAgain.mutations, [], 'so the apiserver does not call the policy at all');
  const requested = structuredClone(request.object);
  requested.metadata.annotations = { [`${PREFIX}/inject`]: 'debug' };
  const withDebug = evaluatePolicy(pods, request, requested);
  assert.equal(failing(requested), undefined);
  assert.ok(debugLabel(withDebug.mutations[debugIndex].patch), JSON.stringify(withDebug.mutations[debugIndex].patch));
});

/** Each object admitted through the webhook's engine and through the policies of `injections`: the same. */
function assertSameAsWebhook(injections: Injection[], objects: [string, string, (object: any) => void][]): SimulatedPolicy[] {
  const ownConfig = resolveInjectorConfig({ annotationPrefix: PREFIX, injections });
  const own = injectionPoliciesOf(ownConfig);
  for (const [label, review, change] of objects) {
    const request = loadReview(review).request;
    const object = structuredClone(request.object);
    change(object);
    const webhookObject = applyResponse(object, mutate({ ...request, object }, ownConfig));
    const policyObject = admitWithPolicies(own, { ...request, object });
    assert.deepEqual(policyObject, webhookObject, `${label}: the policies' object (actual) differs from the webhook's (expected)`);
  }
  return own;
}

test('a trigger reads the label or annotation an earlier injection adds from that injection\'s part of the shared mutation, {{annotation}} included', () => {
  const injections: Injection[] = [
    {
      name: 'port-setter',
      trigger: { type: 'always' },
      targetKinds: ['Pod', 'Deployment'],
      annotations: { 'example.com/port': '8080' },
      labels: { 'mesh.example.com/on': 'yes' },
      volumes: [{ name: 'port-setter', emptyDir: {} }],
    },
    { name: 'port-user', trigger: { type: 'annotation', key: 'example.com/port', valuePattern: '[0-9]+' }, targetKinds: ['Pod', 'Deployment'], containers: [{ name: 'port-user', image: 'x', args: ['--port', '{{annotation}}'] }] },
    { name: 'mesh-user', trigger: { type: 'labelSelector', matchLabels: { 'mesh.example.com/on': 'yes' } }, targetKinds: ['Pod', 'Deployment'], containers: [{ name: 'mesh-user', image: 'y' }] },
  ];
  const template = (object: any) => podOf(object).metadata;
  const own = assertSameAsWebhook(injections, [
    ['a pod', 'pod-create-sleep', () => {}],
    ['a pod with its own port (kept, and read)', 'pod-create-sleep', (object) => (template(object).annotations = { ...template(object).annotations, 'example.com/port': '9090' })],
    ['a pod labelled off (kept: mesh-user stays out)', 'pod-create-sleep', (object) => (template(object).labels = { ...template(object).labels, 'mesh.example.com/on': 'no' })],
    ['a Deployment', 'deployment-create-frontend', () => {}],
    ['a Deployment labelled off on itself only (the label added to its template wins)', 'deployment-create-frontend', (object) => (object.metadata.labels = { ...object.metadata.labels, 'mesh.example.com/on': 'no' })],
  ]);
  const pods = own.find((policy) => policy.metadata.name === 'test.pods')!;
  assert.deepEqual(injectionsOfPolicy(pods), ['port-setter', 'port-user', 'mesh-user']);
  assert.equal(pods.spec.mutations.length, 1, 'one mutation');
  const admitted = admitWithPolicies(own, { ...loadReview('pod-create-sleep').request });
  assert.deepEqual(admitted.spec.containers.find((c: any) => c.name === 'port-user')?.args, ['--port', '8080'], 'port-user\'s {{annotation}} is the value port-setter adds');
  assert.ok(admitted.spec.containers.some((c: any) => c.name === 'mesh-user'), 'mesh-user is triggered by the label port-setter adds');
});

test('the pod policy runs its conditions in its mutation and is not reinvoked, unless an injection reads what a later one adds (then it keeps them as match conditions and is reinvoked, as the webhook applies the earlier one after the later one) or it is emitted as v1alpha1', () => {
  const { spec } = injectionPoliciesOf(config).find((policy) => policy.metadata.name === 'test.pods')!;
  assert.equal(spec.matchConditions, undefined);
  assert.equal(spec.reinvocationPolicy, 'Never');
  const alpha = alphaPolicies.find((policy) => policy.metadata.name === 'test.pods')!.spec;
  assert.deepEqual(alpha.matchConditions.map((condition: any) => condition.name), ['pod-spec-present', 'not-opted-out', 'an-injection-applies']);
  assert.equal(alpha.reinvocationPolicy, 'IfNeeded');
  assert.equal(alpha.mutations.length, 1);
  const injections: Injection[] = [
    { name: 'early', trigger: { type: 'labelSelector', matchLabels: { 'late.example.com/added': 'true' } }, containers: [{ name: 'early', image: 'e' }] },
    { name: 'late', trigger: { type: 'always' }, labels: { 'late.example.com/added': 'true' }, containers: [{ name: 'late', image: 'l' }] },
  ];
  const own = assertSameAsWebhook(injections, [['a pod', 'pod-create-sleep', () => {}]]);
  const pods = own.find((policy) => policy.metadata.name === 'test.pods')!;
  assert.deepEqual(pods.spec.matchConditions.map((condition: any) => condition.name), ['pod-spec-present', 'not-opted-out', 'an-injection-applies']);
  assert.equal(pods.spec.reinvocationPolicy, 'IfNeeded');
  const admitted = admitWithPolicies(own, { ...loadReview('pod-create-sleep').request });
  assert.equal(admitted.metadata.annotations[`${PREFIX}/status`], 'late,early', 'early applied after late, in the reinvocation');
});
