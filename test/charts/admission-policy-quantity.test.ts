// The CEL simulator's quantity library behaves as Kubernetes' (k8s.io/apiserver/pkg/cel/library/quantity.go):
// the examples of that file's documentation, and the functions the QoS check of the policies calls, so a
// policy that passes here computes on the apiserver what it computes here.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { kubernetesCelEnvironment } from '../support/admission-policy-simulator';

const evaluate = (expression: string) => kubernetesCelEnvironment().evaluate(expression, {});

describe('the simulator\'s Kubernetes quantity library', () => {
  test('parses what resource.ParseQuantity parses, and nothing else', () => {
    for (const text of ['1.3G', '1.3Gi', '10000k', '100m', '0.5', '1e3', '+1', '-250m', '.5', '5.']) {
      assert.equal(evaluate(`isQuantity(${JSON.stringify(text)})`), true, `isQuantity("${text}")`);
    }
    for (const text of ['1,3G', '200K', 'Three', 'Mi', '', '1 Gi', '1gi']) {
      assert.equal(evaluate(`isQuantity(${JSON.stringify(text)})`), false, `isQuantity("${text}")`);
      assert.throws(() => evaluate(`quantity(${JSON.stringify(text)})`), `quantity("${text}") is an error`);
    }
  });

  test('compares exactly across units and notations (quantity.go\'s examples)', () => {
    assert.equal(evaluate('quantity("200M").compareTo(quantity("0.2G"))'), 0n);
    assert.equal(evaluate('quantity("50M").compareTo(quantity("50Mi"))'), -1n);
    assert.equal(evaluate('quantity("50Mi").compareTo(quantity("50M"))'), 1n);
    assert.equal(evaluate('quantity("150Mi").isGreaterThan(quantity("100Mi"))'), true);
    assert.equal(evaluate('quantity("50Mi").isGreaterThan(quantity("100Mi"))'), false);
    assert.equal(evaluate('quantity("50M").isLessThan(quantity("100M"))'), true);
    assert.equal(evaluate('quantity("1").compareTo(quantity("1000m"))'), 0n, 'cpu: 1 is 1000m');
    assert.equal(evaluate('quantity("1Gi").compareTo(quantity("1024Mi"))'), 0n);
    assert.equal(evaluate('quantity("0.1m").compareTo(quantity("1m"))'), -1n, 'below a milli is kept (down to nano), not rounded to a milli');
    assert.equal(evaluate('quantity("0").isGreaterThan(quantity("0"))'), false, 'zero is no limit');
  });

  test('arithmetic and conversions (quantity.go\'s examples)', () => {
    assert.equal(evaluate('quantity("50k").add(20).compareTo(quantity("50020"))'), 0n);
    assert.equal(evaluate('quantity("50k").sub(20000).compareTo(quantity("30k"))'), 0n);
    assert.equal(evaluate('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).compareTo(quantity("20"))'), 0n);
    assert.equal(evaluate('quantity("50k").add(quantity("20k")).compareTo(quantity("70k"))'), 0n);
    assert.equal(evaluate('quantity("50k").asInteger()'), 50000n);
    assert.equal(evaluate('quantity("50000000G").isInteger()'), true);
    assert.equal(evaluate('quantity("9999999999999999999999999999999999999G").isInteger()'), false);
    assert.throws(() => evaluate('quantity("9999999999999999999999999999999999999G").asInteger()'), /cannot convert value to integer|overflow/);
    assert.equal(evaluate('quantity("100m").isInteger()'), false);
    assert.equal(evaluate('quantity("50k").sub(20000).asApproximateFloat()'), 30000);
  });

  test('sign is a global function, as quantity.go declares it (its doc\'s `q.sign()` does not compile)', () => {
    assert.equal(evaluate('sign(quantity("-1"))'), -1n);
    assert.equal(evaluate('sign(quantity("0"))'), 0n);
    assert.equal(evaluate('sign(quantity("2Gi"))'), 1n);
    assert.throws(() => evaluate('quantity("1").sign()'));
  });
});
