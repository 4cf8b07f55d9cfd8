// Memory that no request can grow: every cache the engine keys by something a request carries stays
// within its byte bound when every request brings a new, large key. Measured as V8 heap after a full
// collection, so the test holds whatever the caches' own counters say.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { resolveInjectorConfig } from '../../charts/engine';
import { decodeAdmissionReview, evaluate } from '../../webhook/engine';
import { childPointer, pointer } from '../../webhook/engine/json-pointer';
import { PATCH_CACHE_MAX_BYTES, PatchEncoder, stableRecord } from '../../webhook/engine/patch-encoding';
import { qosClassOf } from '../../webhook/engine/qos';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { envoyWithOverrides } from '../support/override-fixtures';
import { loadReview } from '../support/recorded-reviews';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const MiB = 1024 * 1024;

/** A flat string of `length` characters, unique by `index` (its first characters), never a cons of a shared one. */
function uniqueText(index: number, length: number, filler = 'a'): string {
  const bytes = Buffer.alloc(length, filler);
  bytes.write(`${index}-`, 0, 'latin1');
  return bytes.toString('latin1');
}

/** Heap bytes `run` leaves behind, after full collections on both sides. */
function heapLeftBy(run: () => void): number {
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  run();
  gc();
  gc();
  return process.memoryUsage().heapUsed - before;
}

/** Asserts that `count` runs with unique `length`-character keys leave under `boundBytes` of heap. */
function assertBounded(what: string, count: number, length: number, boundBytes: number, runOne: (key: string) => void): void {
  const left = heapLeftBy(() => {
    for (let i = 0; i < count; i++) runOne(uniqueText(i, length));
  });
  const receivedMiB = (count * length) / MiB;
  assert.ok(
    left < boundBytes,
    `${what}: ${count} unique keys of ${length} characters (${receivedMiB.toFixed(0)} MiB received) left ${(left / MiB).toFixed(1)} MiB on the heap; expected under ${(boundBytes / MiB).toFixed(1)} MiB`,
  );
}

describe('request-keyed caches stay within their byte bounds under unique large keys', () => {
  test('the patch encoder: 2,000 patches of an annotation with a unique 50 KB value (each patch over 64 KiB of base64)', () => {
    const encoder = new PatchEncoder();
    assertBounded('PatchEncoder', 2000, 50_000, 2 * PATCH_CACHE_MAX_BYTES, (value) => {
      encoder.encode([{ op: 'add', path: '/metadata/annotations/sidecar-injector.io~1status', value }]);
    });
    assert.ok(encoder.size.bytes <= PATCH_CACHE_MAX_BYTES, `the encoder counts ${encoder.size.bytes} bytes, over its bound of ${PATCH_CACHE_MAX_BYTES}`);
  });

  test('stableRecord (the annotation map made for a pod without one): 2,000 unique 50 KB values', () => {
    assertBounded('stableRecord', 2000, 50_000, 1 * MiB, (value) => {
      stableRecord('sidecar-injector.io/status', value);
    });
  });

  test('the QoS quantity cache: 2,000 containers requesting a unique 60 KB cpu quantity (none parses)', () => {
    assertBounded('quantityCache', 2000, 60_000, 1 * MiB, (cpu) => {
      assert.equal(qosClassOf([{ name: 'app', resources: { requests: { cpu } } }]), undefined);
    });
  });

  test('JSON pointer escaping: 2,000 unique 50 KB tokens', () => {
    assertBounded('escapePointerToken', 2000, 50_000, 1 * MiB, (token) => {
      pointer('/metadata/annotations', `${token}/x`);
    });
  });

  test('childPointer: 2,000 unique 50 KB tokens', () => {
    assertBounded('childPointer', 2000, 50_000, 1 * MiB, (token) => {
      childPointer('/metadata/annotations', token);
    });
  });

  test('override judgements: 20,000 pods with a unique 64-character override value, and 1,000 with a unique 60 KB one', () => {
    const config = resolveInjectorConfig({ injections: [envoyWithOverrides()] });
    const admit = (value: string) => {
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop', annotations: { 'envoy.example.com/log-level': value } }, spec: { containers: [{ name: 'app', image: 'app' }] } };
      const result = evaluate(createRequestFor(pod, 'shop', 'u', false), config, { namespaceAnnotations: {} });
      // Each value is refused (not an allowed level) and said so: judged, not skipped.
      assert.ok(result.podWarnings.some((warning) => warning.override?.reason === 'not-allowed'), value.slice(0, 20));
    };
    assertBounded('override judgements (short values)', 20_000, 64, 2 * MiB, admit);
    assertBounded('override judgements (long values)', 1000, 60_000, 2 * MiB, admit);
  });

  test('evaluate(): 1,000 pods with a unique 200 KB status annotation are all injected and leave the heap flat', () => {
    const config = resolveInjectorConfig({ injections: DEFAULT_INJECTIONS });
    const template = loadReview('pod-create-demoapp');
    const statusKey = 'sidecar-injector.io/status';
    let injected = 0;
    const left = heapLeftBy(() => {
      for (let i = 0; i < 1000; i++) {
        const review = structuredClone(template) as any;
        review.request.uid = `uid-${i}`;
        review.request.object.metadata.annotations = { ...review.request.object.metadata.annotations, [statusKey]: uniqueText(i, 200_000, 'n') };
        const result = evaluate(decodeAdmissionReview(review).request, config);
        if (result.decisions.some((decision) => decision.reason === 'injected')) injected++;
      }
    });
    assert.equal(injected, 1000, 'every pod is injected (its status names no configured injection)');
    assert.ok(left < 4 * MiB, `1,000 admissions with unique 200 KB status values left ${(left / MiB).toFixed(1)} MiB on the heap; expected under 4 MiB`);
  });
});
