// The memory budget's charge for a JSON body's shape (JsonShapeScanner): structure outside strings
// costs, text inside strings costs only its length, whatever characters it holds and wherever the
// chunks of the body are cut.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { JsonShapeScanner } from '../../webhook/server/memory-budget';

const chargeOf = (text: string, cuts: number[] = []): number => {
  const bytes = Buffer.from(text, 'utf8');
  const scanner = new JsonShapeScanner();
  let total = 0;
  let from = 0;
  for (const cut of [...cuts.filter((at) => at > 0 && at < bytes.length)].sort((a, b) => a - b)) {
    total += scanner.charge(bytes.subarray(from, cut));
    from = cut;
  }
  return total + scanner.charge(bytes.subarray(from));
};

test('structure is charged: objects, arrays, members and strings', () => {
  assert.equal(chargeOf('{}'), 16);
  assert.equal(chargeOf('[]'), 16);
  assert.equal(chargeOf('[{},{}]'), 16 + 16 + 4 + 16);
  assert.equal(chargeOf('{"k":0}'), 16 + 4 + 24);
  assert.equal(chargeOf('["a","b"]'), 16 + 4 + 4 + 4);
});

test('characters inside a string cost nothing beyond its length, escaped quotes included', () => {
  assert.equal(chargeOf('"a,b:c{d[e"'), chargeOf('"abcdefghij"'));
  assert.equal(chargeOf(JSON.stringify('{"kind":"Pod","spec":{"containers":[]}}')), 4);
  assert.equal(chargeOf(JSON.stringify('\\",{[:')), 4);
  assert.equal(chargeOf(`{"a":${JSON.stringify('x,'.repeat(1000))}}`), 16 + 4 + 24 + 4);
});

test('the charge is the same wherever the body is cut into chunks', () => {
  const value = fc.letrec((tie) => ({
    json: fc.oneof(
      { depthSize: 'small' },
      fc.string({ unit: fc.constantFrom('a', ',', ':', '{', '[', '"', '\\', 'é', '😀') }),
      fc.integer(),
      fc.array(tie('json'), { maxLength: 4 }),
      fc.dictionary(fc.string({ unit: fc.constantFrom('k', ',', '"', '\\', '{') }), tie('json'), { maxKeys: 4 }),
    ),
  })).json;
  fc.assert(
    fc.property(value, fc.array(fc.nat(400), { maxLength: 6 }), (json, cuts) => {
      const text = JSON.stringify(json);
      assert.equal(chargeOf(text, cuts), chargeOf(text));
    }),
    { numRuns: 2000 },
  );
});

test('never charges more than a scan that ignores strings (the shapes the weights were fitted on are unchanged)', () => {
  const naive = (text: string) => {
    const weights: Record<string, number> = { '{': 16, '[': 16, ',': 4, ':': 24, '"': 2 };
    return [...Buffer.from(text, 'utf8').toString('latin1')].reduce((sum, char) => sum + (weights[char] ?? 0), 0);
  };
  for (const shape of ['[{},{},{}]', '[[[[]]]]', '[[],[]]', '[{"k0":0},{"k1":0}]', '[0,0,0]', '{"a":{"a":{"a":1}}}']) assert.equal(chargeOf(shape), naive(shape), shape);
  assert.ok(chargeOf(JSON.stringify({ note: 'a,b,c:d{e}' })) < naive(JSON.stringify({ note: 'a,b,c:d{e}' })));
});
