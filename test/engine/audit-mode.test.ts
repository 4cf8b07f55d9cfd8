// An injection in audit mode (issue 38): where it would apply, the pod is left byte for byte as it is,
// and the answer says what would have been added; its decision and warning carry the reason `audit`,
// which the webhook counts. Enforcing injections beside it are not affected, and nothing chains on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveInjectorConfig, injectorConfigIssues, type Injection } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { applyResponse, loadReview, podOf } from '../support/recorded-reviews';
import { ENVOY_V1, envoyInjection } from '../support/revision-fixtures';

const audited: Injection = {
  ...envoyInjection(ENVOY_V1),
  mode: 'audit',
  volumes: [{ name: 'envoy-config', emptyDir: {} }],
  env: [{ name: 'MESH', value: 'on' }],
  labels: { 'mesh.example.com/member': 'true' },
};

test('audit mode: the pod is unchanged, the answer says what would have been added, on every call', () => {
  const review = loadReview('pod-create-sleep');
  const before = JSON.stringify(review.request.object);
  const result = evaluate(review.request, resolveInjectorConfig({ injections: [audited] }));
  assert.equal(result.response.patch, undefined, 'no patch at all');
  assert.equal(result.response.allowed, true);
  assert.deepEqual(result.decisions, [{ injection: 'envoy', reason: 'audit' }]);
  assert.deepEqual(result.response.warnings, [
    'audit: injection "envoy" would add containers envoy; volumes envoy-config; env MESH; labels mesh.example.com/member; it is in audit mode, so nothing was added',
  ]);
  assert.deepEqual(result.podWarnings.map((warning) => [warning.injection, warning.reason, warning.shown]), [['envoy', 'audit', true]]);
  assert.equal(JSON.stringify(review.request.object), before, 'the request object itself untouched');
  const again = evaluate(review.request, resolveInjectorConfig({ injections: [audited] }));
  assert.deepEqual(again.response, result.response, 'a reinvocation answers the same, and changes nothing');
});

test('audit mode beside enforcing injections: they inject as before; one triggered by what the audited one would add does not fire', () => {
  const review = loadReview('pod-create-sleep');
  const logShipper: Injection = {
    name: 'log-shipper',
    trigger: { type: 'labelSelector', matchLabels: { 'mesh.example.com/member': 'true' } },
    containers: [{ name: 'log-shipper', image: 'fluent/fluent-bit:3.1' }],
  };
  const waitFor: Injection = { name: 'wait', trigger: { type: 'always' }, initContainers: [{ name: 'wait', image: 'busybox:1.36', command: ['true'] }] };
  const result = evaluate(review.request, resolveInjectorConfig({ injections: [audited, logShipper, waitFor] }));
  assert.deepEqual(result.decisions.map((decision) => decision.reason), ['audit', 'trigger-not-met', 'injected']);
  const pod = podOf(applyResponse(review.request.object, result.response));
  assert.deepEqual(pod.spec.containers.map((c: any) => c.name), review.request.object.spec.containers.map((c: any) => c.name), 'no envoy');
  assert.deepEqual(pod.spec.initContainers.map((c: any) => c.name), [...(review.request.object.spec.initContainers ?? []).map((c: any) => c.name), 'wait']);
  assert.equal(pod.metadata.annotations['sidecar-injector.io/status'], 'wait', 'the status names only what was injected');
  assert.equal(pod.metadata.labels?.['mesh.example.com/member'], undefined);
});

test('mode is validated: anything but enforce or audit fails, naming the field', () => {
  const issues = injectorConfigIssues({ injections: [{ ...audited, mode: 'dry-run' as any }] });
  assert.deepEqual(issues.map((issue) => issue.path), ['injections[0].mode']);
  assert.match(issues[0].message, /enforce, audit|"enforce", "audit"|'enforce', 'audit'/);
});
