// The policy backend computes what the webhook computes: every recorded AdmissionReview's object, and
// variants of it for each trigger, admitted once through the webhook's engine and once through the
// synthesized MutatingAdmissionPolicies (evaluated with a JavaScript CEL implementation), give the same
// object. The e2e suite (npm run e2e) checks the same against a real kube-apiserver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveInjectorConfig } from '../../webhook/config';
import { mutate } from '../../webhook/engine';
import { POLICY_TEST_INJECTIONS, configPolicyLimitations, injectionPoliciesOf, injectionsOfPolicy, triggerVariants } from '../support/admission-policy-config';
import { admitWithPolicies, evaluatePolicy, kubernetesCelEnvironment } from '../support/admission-policy-simulator';
import { mutationGuards } from '../../charts/admission-policy/injection-policy';
import { applyResponse, loadReview, podOf, reviewNames } from '../support/recorded-reviews';

const PREFIX = 'sidecar-injector.io';

const config = resolveInjectorConfig({ annotationPrefix: PREFIX, injections: POLICY_TEST_INJECTIONS });
const policies = injectionPoliciesOf(config);

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
      const once = admitWithPolicies(policies, { ...request, object });
      const twice = admitWithPolicies(policies, { ...request, object: once });
      assert.deepEqual(twice, once, `${name} (${label}): admitting the injected object again changed it`);
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
      // sidecars it placed first, a container that ends a Guaranteed class) it reads the earlier part.
      ['envoy', 'nginx-sidecar', 'probe-defaults', 'debug', 'tier-limits', 'log-shipper', 'mesh-first', 'token-first'],
      // triggered by a label debug adds: it must see the object debug's part made
      ['debug-chained', 'gpu-limits'],
    ],
  );
});

test('an injection left out is explained by a named condition: the policy\'s, or its own guard in its mutation', () => {
  const request = loadReview('pod-create-sleep').request;
  const pods = policies.find((policy) => policy.metadata.name === 'test.pods')!;
  const debugIndex = pods.spec.mutations.findIndex((mutation: any) => injectionsOfPolicy({ spec: { mutations: [mutation] } }).includes('debug'));
  const debugGuard = mutationGuards(pods.spec.mutations[debugIndex].jsonPatch.expression)[injectionsOfPolicy({ spec: { mutations: [pods.spec.mutations[debugIndex]] } }).indexOf('debug')];
  const env = kubernetesCelEnvironment();
  const failing = (object: any) => debugGuard.find((condition) => env.evaluate(condition.expression, { object, request: { ...request, namespace: request.namespace ?? '' } }) !== true)?.name;
  const debugLabel = (patch: { path: string }[]) => patch.some((op) => op.path === '/metadata/labels/debug.example.com~1enabled');
  const asRecorded = evaluatePolicy(pods, request, request.object);
  assert.equal(asRecorded.skippedBy, undefined, 'envoy (always) applies, so the policy runs');
  assert.equal(failing(request.object), 'trigger', 'debug is not requested');
  assert.equal(debugLabel(asRecorded.mutations[debugIndex].patch), false);
  const alreadyInjected = evaluatePolicy(pods, request, asRecorded.object);
  assert.equal(alreadyInjected.skippedBy, 'an-injection-applies', 'admitting the injected pod again: no injection applies');
  assert.deepEqual(alreadyInjected.mutations, [], 'so the apiserver does not call the policy at all');
  const optedOut = structuredClone(request.object);
  optedOut.metadata.annotations = { [`${PREFIX}/inject`]: 'false' };
  assert.equal(evaluatePolicy(pods, request, optedOut).skippedBy, 'not-opted-out');
  const requested = structuredClone(request.object);
  requested.metadata.annotations = { [`${PREFIX}/inject`]: 'debug' };
  const withDebug = evaluatePolicy(pods, request, requested);
  assert.equal(failing(requested), undefined);
  assert.ok(debugLabel(withDebug.mutations[debugIndex].patch), JSON.stringify(withDebug.mutations[debugIndex].patch));
});
