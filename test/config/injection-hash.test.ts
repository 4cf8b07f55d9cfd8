// The hash of an injection as configured: what a pod records of each injection it got, so `status`
// can tell an outdated sidecar from a current one with the pod and the config alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Injection, MAX_HASHES_ANNOTATION_LENGTH, canonicalJson, injectionHash, parseInjectionHashes, resolveInjectorConfig } from '../../webhook/config';
import { synthChart } from '../support/synth-helpers';

const ENVOY: Injection = {
  name: 'envoy',
  trigger: { type: 'always' },
  containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.31.0', args: ['--log-level', 'info'], resources: { requests: { cpu: '100m', memory: '64Mi' } } }],
  volumes: [{ name: 'envoy-config', configMap: { name: 'envoy' } }],
  env: [{ name: 'MESH', value: 'on' }],
};

/** `value` with every object's keys in reverse order (same JSON meaning, different text). */
function reversedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).reverse().map(([key, item]) => [key, reversedKeys(item)]));
}

test('an injection hash is 12 hex digits and does not depend on the order keys were written in', () => {
  const hash = injectionHash(ENVOY);
  assert.match(hash, /^[0-9a-f]{12}$/);
  const reordered = reversedKeys(ENVOY) as Injection;
  assert.notEqual(JSON.stringify(reordered), JSON.stringify(ENVOY), 'the reordered copy must be written differently');
  assert.equal(injectionHash(reordered), hash);
  assert.equal(canonicalJson({ b: 1, a: [{ d: 2, c: null }] }), '{"a":[{"c":null,"d":2}],"b":1}');
});

test('an injection hash changes when an image, env var or volume changes, and not for the trigger or defaults written out', () => {
  const hash = injectionHash(ENVOY);
  const changed = {
    image: { ...ENVOY, containers: [{ ...ENVOY.containers![0], image: 'envoyproxy/envoy:v1.31.1' }] },
    env: { ...ENVOY, env: [{ name: 'MESH', value: 'off' }] },
    'added env': { ...ENVOY, env: [...ENVOY.env!, { name: 'EXTRA', value: '1' }] },
    volume: { ...ENVOY, volumes: [{ name: 'envoy-config', configMap: { name: 'envoy-v2' } }] },
    'native sidecars': { ...ENVOY, nativeSidecars: 'always' as const },
  };
  for (const [what, injection] of Object.entries(changed)) assert.notEqual(injectionHash(injection), hash, `${what} changed: the hash must change`);
  const same = {
    trigger: { ...ENVOY, trigger: { type: 'requested' as const } },
    'targetKinds': { ...ENVOY, targetKinds: ['Pod', 'Deployment'] as const },
    'qos written as its default': { ...ENVOY, qos: 'warn' as const },
    'nativeSidecars written as its default': { ...ENVOY, nativeSidecars: 'never' as const, nativeSidecarPosition: 'first' as const },
    'an empty list': { ...ENVOY, volumeMounts: [] },
  };
  for (const [what, injection] of Object.entries(same)) assert.equal(injectionHash(injection as Injection), hash, `${what}: nothing the pod gets changed, the hash must not`);
});

test('the hash is stable across synths: the admission policies carry the same literal the webhook computes', () => {
  const props = { backend: 'admissionPolicy' as const, injections: [ENVOY] };
  const texts = [synthChart(props), synthChart(props)].map((chart) => JSON.stringify(chart.manifests.filter((m) => m.kind === 'MutatingAdmissionPolicy')));
  assert.equal(texts[0], texts[1], 'two synths of the same props differ');
  const expected = `envoy=${injectionHash(resolveInjectorConfig({ injections: [ENVOY] }).injections[0])}`;
  assert.ok(texts[0].includes(JSON.stringify(expected).slice(1, -1)), `the policy does not carry ${expected}`);
  assert.equal(injectionHash(resolveInjectorConfig({ injections: [ENVOY] }).injections[0]), injectionHash(ENVOY), 'resolving the config (defaults filled in) changes the hash');
});

test('the hashes annotation is read back bounded: malformed entries skipped, an oversized value not read at all', () => {
  assert.deepEqual(parseInjectionHashes('envoy=0123456789ab,bad,x=zz,wait=ffffffffffff,envoy=aaaaaaaaaaaa'), new Map([['envoy', 'aaaaaaaaaaaa'], ['wait', 'ffffffffffff']]));
  assert.equal(parseInjectionHashes(undefined), undefined);
  assert.equal(parseInjectionHashes('a=0123456789ab,'.repeat(Math.ceil(MAX_HASHES_ANNOTATION_LENGTH / 15) + 1)), undefined);
  assert.equal(parseInjectionHashes(Array.from({ length: 65 }, (_, i) => `n${i}=0123456789ab`).join(',')), undefined, 'more than 64 entries');
});
