// The patch encoder's cache: a patch seen before comes back byte for byte as its own JSON text would
// encode, the cache keys only values that cannot change, and its bounds hold.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { resolveInjectorConfig } from '../../charts/engine';
import { decodeAdmissionReview, evaluate } from '../../webhook/engine';
import {
  PATCH_CACHE_MAX_NODES,
  PatchEncoder,
  markStable,
  patchText,
  singletonList,
  stableCopy,
  stableRecord,
} from '../../webhook/engine/patch-encoding';
import { loadReview, reviewNames } from '../support/recorded-reviews';

const plainBase64 = (operations: readonly unknown[]) => Buffer.from(JSON.stringify(operations)).toString('base64');

describe('patches from the cache are the patches', () => {
  test('every recorded review, evaluated three times under one config, gets the same bytes as a plain encoding of its operations', () => {
    const config = resolveInjectorConfig({ injections: DEFAULT_INJECTIONS });
    let patched = 0;
    for (const name of reviewNames()) {
      const answers = [0, 1, 2].map(() => evaluate(decodeAdmissionReview(loadReview(name)).request, config));
      for (const result of answers) {
        if (result.patch.length === 0) continue;
        patched++;
        assert.equal(result.response.patch, plainBase64(result.patch), `${name}: the response patch is the operations' JSON`);
      }
      assert.equal(answers[1].response.patch, answers[0].response.patch, `${name}: the second answer is the first`);
    }
    assert.ok(patched >= 9, `${patched} patched answers`);
  });

  test('two stable values at the same path give two patches, each its own', () => {
    const encoder = new PatchEncoder();
    const a = { name: 'a' };
    const b = { name: 'b' };
    markStable([a, b]);
    const first = [{ op: 'add', path: '/spec/volumes/-', value: a }];
    const second = [{ op: 'add', path: '/spec/volumes/-', value: b }];
    for (let i = 0; i < 2; i++) {
      assert.equal(encoder.encode(first), plainBase64(first));
      assert.equal(encoder.encode(second), plainBase64(second));
    }
    // A primitive value is its own key: "1" and 1 are different patches.
    const text = [{ op: 'add', path: '/metadata/annotations/x', value: '1' }];
    const number = [{ op: 'add', path: '/metadata/annotations/x', value: 1 }];
    assert.equal(encoder.encode(text), plainBase64(text));
    assert.equal(encoder.encode(number), plainBase64(number));
  });

  test('a patch with an object that is not stable is encoded every time and never kept', () => {
    const encoder = new PatchEncoder();
    const fresh = { name: 'rendered-per-request' };
    const operations = [{ op: 'add', path: '/spec/containers/-', value: fresh }];
    assert.equal(encoder.encode(operations), plainBase64(operations));
    // The same object changed in place (as a caller might): the answer follows it.
    fresh.name = 'changed';
    assert.equal(encoder.encode(operations), plainBase64(operations));
    assert.equal(encoder.size.bytes, 0);
  });

  test('the cache starts over past its bound, and keeps answering correctly', () => {
    const encoder = new PatchEncoder();
    let largest = 0;
    for (let i = 0; i < PATCH_CACHE_MAX_NODES * 2; i++) {
      const operations = [{ op: 'add', path: '/metadata/annotations/rendered', value: `pod-${i}` }];
      assert.equal(encoder.encode(operations), plainBase64(operations));
      largest = Math.max(largest, encoder.size.nodes);
    }
    assert.ok(largest <= PATCH_CACHE_MAX_NODES + 1, `at most ${PATCH_CACHE_MAX_NODES + 1} nodes, saw ${largest}`);
    assert.ok(encoder.size.nodes < PATCH_CACHE_MAX_NODES, 'it started over');
  });

  test('patchText is JSON.stringify of the operations', () => {
    const operations = [
      { op: 'add', path: '/metadata/annotations/a~1b', value: 'quote " and \\ and \u2028' },
      { op: 'add', path: '/spec/volumes', value: [{ name: 'v', emptyDir: {} }] },
    ];
    assert.equal(patchText(operations), JSON.stringify(operations));
  });
});

describe('the wrappers patches are made of', () => {
  test('a stable item gets the same frozen list every time; any other a new list', () => {
    const item = { name: 'stable' };
    markStable(item);
    assert.equal(singletonList(item), singletonList(item));
    assert.ok(Object.isFrozen(singletonList(item)));
    const other = { name: 'fresh' };
    assert.notEqual(singletonList(other), singletonList(other));
    assert.deepEqual(singletonList(other), [other]);
  });

  test('a native sidecar copy of a stable container is made once and frozen; of any other, each time', () => {
    const container = { name: 'envoy', image: 'envoy' };
    markStable(container);
    const copy = stableCopy(container, 'native-sidecar', { restartPolicy: 'Always' } as never);
    assert.deepEqual(copy, { name: 'envoy', image: 'envoy', restartPolicy: 'Always' });
    assert.equal(stableCopy(container, 'native-sidecar', { restartPolicy: 'Always' } as never), copy);
    assert.ok(Object.isFrozen(copy));
    const fresh = { name: 'rendered' };
    assert.notEqual(stableCopy(fresh, 'native-sidecar', {}), stableCopy(fresh, 'native-sidecar', {}));
  });

  test('a record is shared per key and value, keeps a __proto__ key as data, and wraps only stable objects', () => {
    assert.equal(stableRecord('sidecar-injector.io/status', 'envoy'), stableRecord('sidecar-injector.io/status', 'envoy'));
    assert.notEqual(stableRecord('sidecar-injector.io/status', 'envoy'), stableRecord('sidecar-injector.io/status', 'nginx'));
    const proto = stableRecord('__proto__', 'x');
    assert.deepEqual(Object.keys(proto), ['__proto__']);
    assert.equal(JSON.stringify(proto), '{"__proto__":"x"}');
    const fresh = { not: 'stable' };
    assert.notEqual(stableRecord('labels', fresh), stableRecord('labels', fresh));
  });
});
