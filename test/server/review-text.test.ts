// The body's text without its managedFields members (review-text.ts): the parsed review is the one
// JSON.parse makes of the whole body with those members deleted, and nothing else; the engine's answer
// is the same either way.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { resolveInjectorConfig } from '../../webhook/config';
import { decodeAdmissionReview, evaluate } from '../../webhook/engine';
import { reviewBytes } from '../../webhook/server/review-text';
import { loadReview, reviewNames } from '../support/recorded-reviews';

/** The text the handler parses: the body's bytes without managedFields, decoded. */
const reviewText = (body: Buffer): string => reviewBytes(body).toString('utf8');

/** A parsed JSON value with every member named managedFields whose value is an array deleted, at any depth. */
function withoutManagedFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutManagedFields);
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === 'managedFields' && Array.isArray(child)) continue;
    // Defined as an own member, as JSON.parse makes it: `copy[key] = ...` would set the prototype for
    // a member named __proto__ (fast-check found {"__proto__": []}).
    Object.defineProperty(copy, key, { value: withoutManagedFields(child), enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

const skipped = (text: string): unknown => JSON.parse(reviewText(Buffer.from(text)));

describe('reviewText', () => {
  test('every recorded review parses as the whole body without its managedFields, and the engine answers the same', () => {
    const config = resolveInjectorConfig({ injections: DEFAULT_INJECTIONS });
    let withMember = 0;
    for (const name of reviewNames()) {
      const text = JSON.stringify(loadReview(name));
      if (text.includes('"managedFields":[')) withMember++;
      const whole = JSON.parse(text);
      const parsed = skipped(text);
      assert.deepEqual(parsed, withoutManagedFields(whole), name);
      const fromWhole = evaluate(decodeAdmissionReview(whole).request, config);
      const fromSkipped = evaluate(decodeAdmissionReview(parsed).request, config);
      assert.deepEqual(fromSkipped.response, fromWhole.response, `${name}: the answer`);
      assert.deepEqual(fromSkipped.decisions, fromWhole.decisions, `${name}: the decisions`);
    }
    assert.ok(withMember >= 5, `expected recorded reviews with managedFields, found ${withMember}`);
  });

  test('text that only looks like the member, inside strings, is kept as it is', () => {
    const tricky = {
      metadata: {
        annotations: {
          a: '{"managedFields":[1,2]}',
          b: 'x","managedFields":["y',
          c: '\\',
          d: ',"managedFields":[',
        },
        labels: { managedFields: 'a label, not the member' },
        managedFields: [{ manager: 'kubectl', fieldsV1: { 'f:metadata': { 'f:annotations': { 'f:a': {}, '.': {} } } }, note: 'a "quoted" ] } [ {', path: 'C:\\' }],
      },
      spec: { managedFields: [] },
    };
    const text = JSON.stringify(tricky);
    assert.deepEqual(skipped(text), withoutManagedFields(tricky));
  });

  test('a member named __proto__ is a member like any other, its managedFields removed too', () => {
    const text = '{"__proto__":[],"metadata":{"__proto__":{"managedFields":[1],"a":"b"},"managedFields":[2]}}';
    const parsed = skipped(text) as { metadata: object };
    assert.deepEqual(parsed, withoutManagedFields(JSON.parse(text)));
    assert.deepEqual(Object.keys(parsed.metadata), ['__proto__'], 'an own member, without managedFields beside it');
    assert.deepEqual(Object.getOwnPropertyDescriptor(parsed.metadata, '__proto__')?.value, { a: 'b' });
  });

  test('a body cut off inside the member, or without it, is the body as it is', () => {
    const text = JSON.stringify({ metadata: { name: 'a', managedFields: [{ manager: 'x' }] } });
    for (let cut = 1; cut < text.length; cut++) {
      const prefix = text.slice(0, cut);
      const result = reviewText(Buffer.from(prefix));
      if (cut < text.indexOf(']}}') + 1) assert.equal(result, prefix, `cut at ${cut}`);
      // Cut or not, a prefix is never valid JSON.
      assert.throws(() => JSON.parse(result), SyntaxError, `cut at ${cut}: ${result}`);
    }
  });

  test('multi-byte UTF-8 next to the members, bodies one after another of any size, each its own text', () => {
    const bodies = [
      { metadata: { name: 'ünïcødé-前', managedFields: [{ manager: 'kübectl ✓', fieldsV1: { 'f:metadata': {} } }], labels: { 'a': '😀' } }, spec: { x: 'é' } },
      // Larger than the buffer the kept bytes are gathered in (SMALL_BODY_BYTES), and a small one after it.
      { metadata: { annotations: { big: 'ß'.repeat(40_000) }, managedFields: [{ manager: 'm' }] }, spec: { managedFields: [1], y: '→' } },
      { managedFields: [], a: '€' },
      { metadata: { name: 'short', managedFields: [{ manager: 'x' }] } },
    ];
    for (const value of [...bodies, ...bodies.reverse()]) {
      const text = JSON.stringify(value);
      assert.deepEqual(skipped(text), withoutManagedFields(value), text.slice(0, 80));
    }
  });

  test('any JSON with managedFields members anywhere parses as the whole without them (property)', () => {
    const leaf = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null));
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('tree'), { maxLength: 4 }), tie('object')),
      object: fc
        .tuple(fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('managedFields', 'f:managedFields', 'managedField')), tie('tree'), { maxKeys: 4 }), fc.option(fc.array(tie('tree'), { maxLength: 3 })), fc.nat(4))
        .map(([members, managed, at]) => {
          if (managed === null) return members;
          // The member at any place among the others.
          const entries = Object.entries(members).filter(([key]) => key !== 'managedFields');
          entries.splice(Math.min(at, entries.length), 0, ['managedFields', managed]);
          return Object.fromEntries(entries);
        }),
    }));
    fc.assert(
      fc.property(tree, (value) => {
        assert.deepEqual(skipped(JSON.stringify(value)), withoutManagedFields(value));
      }),
      { numRuns: 2000 },
    );
  });
});
