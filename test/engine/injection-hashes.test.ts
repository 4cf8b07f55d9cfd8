// The webhook records, beside the status annotation, the hash of each injection it applied, as
// configured: a second admission (reinvocation, or the injected pod created again) changes nothing,
// and an injection added on reinvocation is appended, as the admission policies append it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Injection, injectionHash, parseInjectionHashes, resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { applyResponse, decodePatch, loadReview, podOf } from '../support/recorded-reviews';

const ENVOY: Injection = { name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.0' }] };
const LOGS: Injection = { name: 'logs', trigger: { type: 'labelSelector', matchLabels: { logs: 'on' } }, containers: [{ name: 'fluent-bit', image: 'fluent/fluent-bit:3.0' }] };
const config = resolveInjectorConfig({ injections: [ENVOY, LOGS] });
const [envoy, logs] = config.injections;
const HASHES = 'sidecar-injector.io/injection-hashes';
const STATUS = 'sidecar-injector.io/status';

function admit(object: any) {
  const request = { ...loadReview('pod-create-demoapp').request, object };
  const result = evaluate(request, config);
  return { result, object: applyResponse(object, result.response) };
}

test('an injected pod records each injection applied with its hash as configured', () => {
  const pod = loadReview('pod-create-demoapp').request.object;
  pod.metadata.labels = { ...pod.metadata.labels, logs: 'on' };
  const { object } = admit(pod);
  const annotations = podOf(object).metadata.annotations;
  assert.equal(annotations[STATUS], 'envoy,logs');
  assert.equal(annotations[HASHES], `envoy=${injectionHash(envoy)},logs=${injectionHash(logs)}`);
  assert.deepEqual(parseInjectionHashes(annotations[HASHES]), new Map([['envoy', injectionHash(envoy)], ['logs', injectionHash(logs)]]));
});

test('admitting the injected pod again changes nothing (reinvocation)', () => {
  const { object } = admit(loadReview('pod-create-demoapp').request.object);
  const again = admit(object);
  assert.deepEqual(decodePatch(again.result.response), [], 'a second admission must not patch');
});

test('an injection applied on reinvocation is appended to the hashes, the earlier ones kept as they were', () => {
  const { object } = admit(loadReview('pod-create-demoapp').request.object);
  const pod = podOf(object);
  // An older version's hash stays: the pod got that envoy, whatever the config says now.
  pod.metadata.annotations[HASHES] = 'envoy=0123456789ab';
  pod.metadata.labels = { ...pod.metadata.labels, logs: 'on' };
  const again = admit(object);
  const annotations = podOf(again.object).metadata.annotations;
  assert.equal(annotations[STATUS], 'envoy,logs');
  assert.equal(annotations[HASHES], `envoy=0123456789ab,logs=${injectionHash(logs)}`);
});

test('a pod injected by a version that wrote no hashes gets none added for what it already has', () => {
  const { object } = admit(loadReview('pod-create-demoapp').request.object);
  delete podOf(object).metadata.annotations[HASHES];
  const again = admit(object);
  assert.deepEqual(decodePatch(again.result.response), []);
});
