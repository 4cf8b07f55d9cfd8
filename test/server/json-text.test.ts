// Text the server writes by hand on the per-request path must be exactly what JSON.stringify writes:
// jsonString's shortcut for plain strings, and the pointers the engine keeps and hands out again.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { childPointer, pointer } from '../../webhook/engine/json-pointer';
import { jsonString } from '../../webhook/server/json-text';

test('jsonString writes what JSON.stringify writes, for any string', () => {
  const cases = [
    '',
    'plain-uid-0001',
    'with "quotes"',
    'back\\slash',
    'tab\there',
    'new\nline',
    '\u0000\u001f\u007f',
    'naïve',
    'emoji 🚀',
    'lone \ud800 surrogate',
    '\u2028\u2029',
    'x'.repeat(256),
    'x'.repeat(257) + '"',
  ];
  for (const value of cases) assert.equal(jsonString(value), JSON.stringify(value), JSON.stringify(value));
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ maxLength: 300 }), fc.string({ unit: 'grapheme-ascii', maxLength: 40 })), (value) => {
      assert.equal(jsonString(value), JSON.stringify(value));
    }),
    { numRuns: 2000 },
  );
});

test('childPointer gives the pointer that pointer() builds, escapes included, past its bound too', () => {
  const cases: [string, string][] = [
    ['/spec/containers', '-'],
    ['/metadata', 'annotations'],
    ['/metadata/annotations', 'sidecar-injector.io/status'],
    ['/spec/template/metadata/labels', 'a~b/c'],
    ['', 'top'],
  ];
  for (let round = 0; round < 3; round++) {
    for (const [base, token] of cases) assert.equal(childPointer(base, token), pointer(base, token));
    // More distinct pointers than it keeps: it starts over, and stays right.
    for (let i = 0; i < 1500; i++) assert.equal(childPointer(`/spec/containers/${i}`, `env/${round}`), pointer(`/spec/containers/${i}`, `env/${round}`));
  }
});
