// A trigger's valuePattern runs on annotation values any workload author controls, so it is compiled
// with RE2 (linear time, the syntax of Kubernetes CEL's matches()) and a pattern RE2 rejects fails
// synth. The whole value must still match, as before.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { Injection, InjectorConfigError, SidecarInjectorPropsError, loadInjectorConfig, resolveInjectorConfig } from '../../charts/engine';
import { compileValuePattern } from '../../webhook/config/validate-injector-config';
import { evaluate } from '../../webhook/engine';
import { buildChart } from '../support/synth-helpers';
import { loadReview } from '../support/recorded-reviews';

const KEY = 'example.com/proxy';

function patternInjection(valuePattern: string): Injection {
  return {
    name: 'proxy',
    trigger: { type: 'annotation', key: KEY, valuePattern },
    containers: [{ name: 'proxy', image: 'example.com/proxy:1.0' }],
  };
}

/** The recorded pod `sleep` with annotation `example.com/proxy` set to `value`. */
function annotatedPod(value: string) {
  const request = loadReview('pod-create-sleep').request;
  request.object.metadata.annotations[KEY] = value;
  return request;
}

function decisionFor(valuePattern: string, value: string): string {
  const result = evaluate(annotatedPod(value), resolveInjectorConfig({ injections: [patternInjection(valuePattern)] }));
  return result.decisions[0].reason;
}

describe('valuePattern matching, with RE2', () => {
  test('answers within a second for (a+)+$ against 50,000 "a"s and a "!" (catastrophic for a backtracking engine), without injecting', () => {
    const config = resolveInjectorConfig({ injections: [patternInjection('(a+)+$')] });
    const request = annotatedPod('a'.repeat(50_000) + '!');
    const started = process.hrtime.bigint();
    const result = evaluate(request, config);
    const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
    assert.ok(elapsedMs < 1000, `expected the engine to answer within 1000 ms, it took ${elapsedMs.toFixed(1)} ms`);
    assert.deepEqual(result.decisions, [{ injection: 'proxy', reason: 'trigger-not-met' }]);
    assert.equal(result.response.patch, undefined, 'no patch for a value the pattern does not match');
  });

  test('the same pattern still matches 50,000 "a"s, within a second', () => {
    const started = process.hrtime.bigint();
    assert.equal(decisionFor('(a+)+$', 'a'.repeat(50_000)), 'injected');
    const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
    assert.ok(elapsedMs < 1000, `took ${elapsedMs.toFixed(1)} ms`);
  });

  const wholeValue: [pattern: string, value: string, expected: 'injected' | 'trigger-not-met'][] = [
    ['true', 'true', 'injected'],
    ['true', 'true!', 'trigger-not-met'],
    ['true', 'untrue', 'trigger-not-met'],
    ['on|yes', 'yes', 'injected'],
    ['on|yes', 'only', 'trigger-not-met'],
    ['on|yes', 'eyes', 'trigger-not-met'],
    ['.+:[0-9]+', 'db:5432', 'injected'],
    ['.+:[0-9]+', 'db:5432/x', 'trigger-not-met'],
    ['[a-z]+', 'abc\n', 'trigger-not-met'],
    ['(?i)TRUE', 'true', 'injected'],
  ];
  for (const [pattern, value, expected] of wholeValue) {
    test(`the whole value must match: /${pattern}/ against ${JSON.stringify(value)} is ${expected}`, () => {
      assert.equal(decisionFor(pattern, value), expected);
    });
  }

  test('a pattern without metacharacters, compared as a string, matches exactly what RE2 matches', () => {
    // Literal patterns and values drawn from the same few characters, so that equal, prefixed and
    // near values all come up; metacharacters among them make the pattern go to RE2 on both sides.
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'T', '-', '/', '.', '*', '(', ')', '|', '\\', '[', ']', 'é', '😀', ' ', '\n'), maxLength: 6 });
    fc.assert(
      fc.property(text, text, fc.boolean(), (pattern, other, same) => {
        const value = same ? pattern : other;
        // A pattern RE2 rejects ("[", "a**") must still be rejected.
        const outcome = (match: () => boolean) => {
          try {
            return match();
          } catch {
            return 'rejected';
          }
        };
        assert.equal(
          outcome(() => compileValuePattern(pattern).matches(value)),
          outcome(() => RE2JS.compile(pattern).matches(value)),
          `/${pattern}/ against ${JSON.stringify(value)}`,
        );
      }),
      { numRuns: 3000 },
    );
  });
});

describe('a valuePattern RE2 does not accept fails synth, naming the prop path', () => {
  const rejected: [what: string, pattern: string, reason: RegExp][] = [
    ['a backreference', '(a)\\1', /invalid escape sequence/],
    ['a lookahead', 'a(?=b)', /invalid or unsupported Perl syntax/],
    ['a lookbehind', '(?<=a)b', /invalid named capture|unsupported/],
    ['an unclosed group', '(unclosed', /missing closing \)/],
  ];
  for (const [what, pattern, reason] of rejected) {
    test(`${what}: ${pattern}`, () => {
      let error: unknown;
      try {
        buildChart({ injections: [patternInjection(pattern)] });
      } catch (caught) {
        error = caught;
      }
      assert.ok(error instanceof SidecarInjectorPropsError, `expected synth to fail with SidecarInjectorPropsError, got ${String(error)}`);
      assert.deepEqual(error.issues.map((issue) => issue.path), ['injections[0].trigger.valuePattern'], error.message);
      assert.match(error.issues[0].message, /RE2 syntax/);
      assert.match(error.issues[0].message, reason);
    });
  }

  test('the webhook refuses the same pattern in a hand-edited ConfigMap', () => {
    const text = JSON.stringify({ injections: [patternInjection('(a)\\1')] });
    assert.throws(() => loadInjectorConfig(text), (error: unknown) => {
      assert.ok(error instanceof InjectorConfigError);
      assert.equal(error.issues[0].path, 'injections[0].trigger.valuePattern');
      return true;
    });
  });
});
