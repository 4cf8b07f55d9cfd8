// The policy backend computes what the webhook computes: every recorded AdmissionReview's object, and
// variants of it for each trigger, admitted once through the webhook's engine and once through the
// synthesized MutatingAdmissionPolicies (evaluated with a JavaScript CEL implementation), give the same
// object. The e2e suite (npm run e2e) checks the same against a real kube-apiserver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveInjectorConfig } from '../webhook/config';
import { mutate } from '../webhook/engine';
import { POLICY_TEST_INJECTIONS, configPolicyLimitations, injectionPoliciesOf, triggerVariants } from './support/admission-policy-config';
import { admitWithPolicies, evaluatePolicy } from './support/admission-policy-simulator';
import { applyResponse, loadReview, podOf, reviewNames } from './support/recorded-reviews';

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

test('a policy is skipped by its named match condition, so "why was this not injected?" has an answer', () => {
  const request = loadReview('pod-create-sleep').request;
  const debug = policies.find((policy) => policy.metadata.name.endsWith('.debug.pods'))!;
  assert.equal(evaluatePolicy(debug, request, request.object).skippedBy, 'trigger');
  const optedOut = structuredClone(request.object);
  optedOut.metadata.annotations = { [`${PREFIX}/inject`]: 'false' };
  assert.equal(evaluatePolicy(debug, request, optedOut).skippedBy, 'not-opted-out');
});
