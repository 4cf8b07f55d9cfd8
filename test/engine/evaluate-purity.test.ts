// evaluate() writes nothing into the request it is given. `status` and the reconciler rely on it: they
// evaluate every pod of a cluster as it was listed (createRequestFor(..., copy false)), and read the same
// pod again afterwards for its workload, its volumes and its report.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { arbitraryScenario, describeScenario } from '../support/arbitraries';
import { POLICY_TEST_INJECTIONS, TEST_ANNOTATION_PREFIX } from '../support/admission-policy-config';
import { loadReview, reviewNames } from '../support/recorded-reviews';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);

/** Evaluates `request` and fails, naming what changed, if the request is not as it was. */
function assertUntouched(request: any, evaluateIt: (request: any) => unknown, what: string): void {
  const before = structuredClone(request);
  evaluateIt(request);
  assert.deepEqual(request, before, `${what}: evaluate() changed its request (actual) from what it was given (expected)`);
}

describe('evaluate() leaves its request as it was', () => {
  const configs = {
    'the default app': resolveInjectorConfig({ injections: DEFAULT_INJECTIONS }),
    'every test injection (overrides, workloads, volumes, audit)': resolveInjectorConfig({ annotationPrefix: TEST_ANNOTATION_PREFIX, injections: POLICY_TEST_INJECTIONS }),
  };
  for (const name of reviewNames()) {
    test(`${name}, under the default app and under every test injection, with and without namespace defaults`, () => {
      for (const [label, config] of Object.entries(configs)) {
        assertUntouched(loadReview(name).request, (request) => evaluate(request, config), `${name}, ${label}`);
        const namespaceAnnotations = { 'envoy.example.com/memory-request': '96Mi', 'example.com/log-level': 'debug' };
        assertUntouched(loadReview(name).request, (request) => evaluate(request, config, { namespaceAnnotations }), `${name}, ${label}, namespace defaults`);
      }
    });
  }

  test('on randomized recorded requests and random valid configs', () => {
    fc.assert(
      fc.property(arbitraryScenario(), (scenario) => {
        assertUntouched(scenario.request, (request) => evaluate(request, scenario.resolved), describeScenario(scenario));
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });
});
