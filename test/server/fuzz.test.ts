// The in-process webhook fed what no apiserver sends: random bytes, cut-off reviews, JSON nested
// 100 000 deep, 5 MiB strings, and a wrong type at every field of recorded reviews. Every answer must
// be a 2xx or 4xx (a 5xx fails the admission under failurePolicy Fail, and says "our bug"), the process
// must survive, and afterwards a recorded review must still be answered exactly as before.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Agent } from 'node:https';
import fc from 'fast-check';
import { InjectorConfig, generateWebhookCertificate, resolveInjectorConfig } from '../../charts/engine';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { evaluate } from '../../webhook/engine';
import { applyResponse, decodePatch, loadReview, names, podOf } from '../support/recorded-reviews';
import { HttpsResult, InProcessWebhook, keepAliveAgent, postAdmission, opsRequest, startInProcess } from '../support/webhook-harness';

const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
const ca = certificate.caCertificate;
const CONFIG: InjectorConfig = { injections: DEFAULT_INJECTIONS };
const MiB = 1024 * 1024;
const DEPTH = 100_000;
const RUNS = 100;

type Json = Record<string, any>;

let webhook: InProcessWebhook;
let agent: Agent;
/** Errors that escaped a request handler: each one would kill a process without a handler for them. */
const escaped: string[] = [];
const recordEscape = (error: unknown) => escaped.push(`${(error as Error)?.stack ?? String(error)}`);

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly result?: HttpsResult;
  readonly error?: string;
}

async function send(body: string | Buffer, headers?: Record<string, string>): Promise<Answer> {
  try {
    const result = await postAdmission(webhook.port, body, { ca, agent, headers });
    return { status: result.status, text: result.text, result };
  } catch (error) {
    return { status: 0, text: '', error: `${(error as NodeJS.ErrnoException).code ?? ''} ${(error as Error).message}` };
  }
}

function preview(text: string | Buffer, length = 160): string {
  const shown = String(text).slice(0, length);
  return shown.length < String(text).length ? `${shown}… (${String(text).length} chars)` : shown;
}

/** 2xx or 4xx, and when 200 a well-formed allowed response for `uid`. */
function assertAnswered(what: string, answer: Answer, uid?: unknown): void {
  assert.ok(
    answer.status >= 200 && answer.status < 500,
    `${what}: expected a 2xx or 4xx, got ${answer.status || answer.error}: ${preview(answer.text, 400)}`,
  );
  if (answer.status !== 200) return;
  const review = JSON.parse(answer.text);
  assert.equal(review.kind, 'AdmissionReview', `${what}: a 200 carries an AdmissionReview`);
  assert.equal(review.response?.allowed, true, `${what}: ${preview(answer.text, 400)}`);
  if (typeof uid === 'string') assert.equal(review.response.uid, uid, `${what}: the uid is echoed`);
}

/** The errors that escaped since the last call, after letting pending rejections surface. */
async function takeEscaped(): Promise<string[]> {
  await new Promise((resolve) => setImmediate(resolve));
  return escaped.splice(0);
}

async function assertNothingEscaped(): Promise<void> {
  assert.deepEqual(await takeEscaped(), [], 'errors escaped the request handler (unhandled rejections or uncaught exceptions)');
}

/** The path of every value in `value`, outermost first (not inside managedFields: the engine never looks). */
function pathsOf(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [path];
  if (path[path.length - 1] === 'managedFields') return out;
  if (Array.isArray(value)) value.forEach((item, index) => out.push(...pathsOf(item, [...path, index])));
  else if (value !== null && typeof value === 'object') for (const [key, item] of Object.entries(value)) out.push(...pathsOf(item, [...path, key]));
  return out;
}

function setAt(root: Json, path: (string | number)[], value: unknown): void {
  let node: any = root;
  for (const token of path.slice(0, -1)) node = node[token];
  node[path[path.length - 1]] = value;
}

const SENTINEL = '__REPLACED_BY_DEEP_JSON__';
const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const deepObject = (depth: number) => '{"a":'.repeat(depth) + 'null' + '}'.repeat(depth);

/** The review's text with the value at `path` replaced by raw JSON text (which JSON.stringify could not build). */
function withRawJsonAt(review: Json, path: (string | number)[], raw: string): string {
  const copy = structuredClone(review);
  if (path.length === 0) return raw;
  setAt(copy, path, SENTINEL);
  return JSON.stringify(copy).replace(JSON.stringify(SENTINEL), () => raw);
}

before(async () => {
  process.on('unhandledRejection', recordEscape);
  process.on('uncaughtException', recordEscape);
  webhook = await startInProcess(CONFIG, certificate);
  agent = keepAliveAgent(ca, undefined, 4);
});

after(async () => {
  agent.destroy();
  await webhook.stop();
  process.off('unhandledRejection', recordEscape);
  process.off('uncaughtException', recordEscape);
});

describe('the webhook fed random and broken bodies', () => {
  test('answers random bytes with a 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), async (bytes) => {
        const answer = await send(Buffer.from(bytes));
        assert.ok(answer.status >= 400 && answer.status < 500, `random bytes: got ${answer.status || answer.error}: ${preview(answer.text)}`);
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
    await assertNothingEscaped();
  });

  test('answers random JSON, and random JSON shaped like an AdmissionReview, with a 2xx or 4xx', async () => {
    const shaped = fc.record({
      apiVersion: fc.oneof(fc.constantFrom('admission.k8s.io/v1', 'admission.k8s.io/v1beta1'), fc.jsonValue()),
      kind: fc.oneof(fc.constant('AdmissionReview'), fc.jsonValue()),
      request: fc.oneof(
        fc.jsonValue(),
        fc.record({
          uid: fc.oneof(fc.uuid(), fc.jsonValue()),
          kind: fc.oneof(fc.constantFrom({ group: '', version: 'v1', kind: 'Pod' }, { group: 'apps', version: 'v1', kind: 'Deployment' }), fc.jsonValue()),
          operation: fc.oneof(fc.constantFrom('CREATE', 'UPDATE'), fc.jsonValue()),
          object: fc.oneof(
            fc.jsonValue(),
            fc.record({ metadata: fc.jsonValue(), spec: fc.oneof(fc.jsonValue(), fc.record({ containers: fc.jsonValue() })) }),
          ),
        }),
      ),
    });
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), shaped), async (value) => {
        const answer = await send(JSON.stringify(value));
        assertAnswered(`body ${preview(JSON.stringify(value))}`, answer, (value as Json)?.request?.uid);
      }),
      { numRuns: RUNS * 2, includeErrorInReport: true },
    );
    await assertNothingEscaped();
  });

  test('answers every cut-off prefix of recorded reviews with 400', async () => {
    for (const name of ['pod-create-sleep', 'deployment-create-frontend', 'cronjob-create-nightly']) {
      const text = JSON.stringify(loadReview(name));
      const step = Math.max(1, Math.floor(text.length / 120));
      for (let cut = 0; cut < text.length; cut += step) {
        const answer = await send(text.slice(0, cut));
        assert.equal(answer.status, 400, `${name} cut after ${cut} of ${text.length} chars: got ${answer.status || answer.error}: ${preview(answer.text)}`);
      }
    }
    await assertNothingEscaped();
  });

  test('answers bodies in the wrong content type with 415', async () => {
    const body = JSON.stringify(loadReview('pod-create-sleep'));
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonp', 'multipart/form-data; boundary=x']) {
      const answer = await send(body, { 'Content-Type': type });
      assert.equal(answer.status, 415, `Content-Type ${type}: got ${answer.status || answer.error}`);
    }
    await assertNothingEscaped();
  });
});

describe('the webhook fed JSON nested 100 000 deep', () => {
  const review = loadReview('pod-create-sleep');
  const uid = review.request.uid;
  const positions: (string | number)[][] = [
    [],
    ['kind'],
    ['apiVersion'],
    ['request'],
    ['request', 'uid'],
    ['request', 'kind'],
    ['request', 'kind', 'kind'],
    ['request', 'operation'],
    ['request', 'name'],
    ['request', 'namespace'],
    ['request', 'userInfo'],
    ['request', 'object'],
    ['request', 'oldObject'],
    ['request', 'dryRun'],
    ['request', 'object', 'metadata'],
    ['request', 'object', 'metadata', 'name'],
    ['request', 'object', 'metadata', 'generateName'],
    ['request', 'object', 'metadata', 'labels'],
    ['request', 'object', 'metadata', 'labels', 'app'],
    ['request', 'object', 'metadata', 'annotations'],
    ['request', 'object', 'metadata', 'annotations', 'sidecar-injector-webhook.morven.me/inject'],
    ['request', 'object', 'metadata', 'annotations', 'sidecar-injector.io/inject'],
    ['request', 'object', 'metadata', 'annotations', 'sidecar-injector.io/status'],
    ['request', 'object', 'spec'],
    ['request', 'object', 'spec', 'containers'],
    ['request', 'object', 'spec', 'containers', 0],
    ['request', 'object', 'spec', 'containers', 0, 'name'],
    ['request', 'object', 'spec', 'containers', 0, 'env'],
    ['request', 'object', 'spec', 'containers', 0, 'readinessProbe'],
    ['request', 'object', 'spec', 'initContainers'],
    ['request', 'object', 'spec', 'volumes'],
  ];
  for (const [shape, raw] of [
    ['arrays', deepArray(DEPTH)],
    ['objects', deepObject(DEPTH)],
  ] as const) {
    test(`answers ${DEPTH} nested ${shape} at every position of a review with a 2xx or 4xx`, async () => {
      const failures: string[] = [];
      for (const path of positions) {
        const answer = await send(withRawJsonAt(review, path, raw));
        const where = `nested ${shape} at ${path.join('.') || '(body)'}`;
        try {
          assertAnswered(where, answer, path.join('.') === 'request.uid' ? undefined : uid);
        } catch (error) {
          failures.push((error as Error).message.split('\n')[0]);
        }
        for (const error of await takeEscaped()) failures.push(`${where}: answered ${answer.status}, then an error escaped: ${error.split('\n').slice(0, 3).join(' | ')}`);
      }
      assert.deepEqual(failures, [], 'positions answered with something other than a 2xx or 4xx');
      await assertNothingEscaped();
    });
  }
});

describe('the webhook fed huge strings', () => {
  const places: [string, (review: Json) => void][] = [
    ['request.name', (review) => (review.request.name = 'a'.repeat(5 * MiB))],
    ['metadata.name', (review) => (review.request.object.metadata.name = 'a'.repeat(5 * MiB))],
    ['an annotation value', (review) => (review.request.object.metadata.annotations['example.com/owner'] = 'a'.repeat(5 * MiB))],
    ['a label value', (review) => (review.request.object.metadata.labels.app = 'a'.repeat(5 * MiB))],
    ['a container image', (review) => (review.request.object.spec.containers[0].image = 'a'.repeat(5 * MiB))],
    ['the inject annotation, one name repeated', (review) => (review.request.object.metadata.annotations['sidecar-injector.io/inject'] = 'x,'.repeat(2.5 * MiB))],
    ['an annotation key', (review) => (review.request.object.metadata.annotations['example.com/' + 'k'.repeat(5 * MiB)] = 'v')],
  ];
  for (const [where, place] of places) {
    test(`admits a pod with a 5 MiB string in ${where}, its patch applying`, async () => {
      const review = loadReview('pod-create-sleep');
      place(review);
      const answer = await send(JSON.stringify(review));
      assertAnswered(where, answer, review.request.uid);
      const response = JSON.parse(answer.text).response;
      const patched = applyResponse(review.request.object, response);
      assert.ok(names(podOf(patched).spec.containers).includes('envoy'), `envoy was injected: ${names(podOf(patched).spec.containers).join(', ')}`);
      await assertNothingEscaped();
    });
  }

  test('answers a 5 MiB inject annotation naming 600 000 unknown injections with a bounded response', async () => {
    // One warning per unknown name turns 5 MiB in into ~56 MB out; the apiserver keeps only a few KiB of warnings.
    const review = loadReview('pod-create-sleep');
    let value = '';
    for (let i = 0; value.length < 5 * MiB; i++) value += `n${i},`;
    review.request.object.metadata.annotations['sidecar-injector.io/inject'] = value;
    const started = Date.now();
    const answer = await send(JSON.stringify(review));
    const seconds = (Date.now() - started) / 1000;
    assertAnswered('5 MiB of unknown names', answer, review.request.uid);
    const warnings: string[] = JSON.parse(answer.text).response.warnings ?? [];
    assert.ok(
      answer.text.length <= MiB,
      `the response is ${(answer.text.length / MiB).toFixed(1)} MiB with ${warnings.length} warnings (took ${seconds.toFixed(2)} s); expected at most 1 MiB`,
    );
    await assertNothingEscaped();
  });

  test('answers a body over the 7 MiB limit with 413', async () => {
    const review = loadReview('pod-create-sleep');
    review.request.object.metadata.annotations['example.com/owner'] = 'a'.repeat(8 * MiB);
    const answer = await send(JSON.stringify(review));
    assert.equal(answer.status, 413, `got ${answer.status || answer.error}: ${preview(answer.text)}`);
    await assertNothingEscaped();
  });
});

describe('the webhook fed a wrong type at every field of recorded reviews', () => {
  const WRONG: unknown[] = [0, 'text', null, true, [], {}, [null], [0]];

  for (const name of ['pod-create-sleep', 'deployment-create-frontend', 'cronjob-create-nightly']) {
    test(`${name}: answers a wrong type at each field with 200 allowed (a patch that applies) or 400`, async () => {
      const review = loadReview(name);
      const failures: string[] = [];
      let sent = 0;
      for (const path of pathsOf(review)) {
        if (path.length === 0) continue;
        for (const wrong of WRONG) {
          const mutated = structuredClone(review);
          setAt(mutated, path, structuredClone(wrong));
          const answer = await send(JSON.stringify(mutated));
          sent++;
          const what = `${path.join('.')} = ${JSON.stringify(wrong)}`;
          try {
            assert.ok(answer.status === 200 || answer.status === 400, `${what}: expected 200 or 400, got ${answer.status || answer.error}: ${preview(answer.text, 300)}`);
            assertAnswered(what, answer, mutated.request?.uid);
            if (answer.status === 200) {
              const response = JSON.parse(answer.text).response;
              try {
                applyResponse(mutated.request.object, response);
              } catch (error) {
                assert.fail(`${what}: the patch does not apply: ${(error as Error).message}; patch ${JSON.stringify(decodePatch(response))}`);
              }
            }
          } catch (error) {
            failures.push((error as Error).message.split('\n')[0]);
          }
          for (const error of await takeEscaped()) failures.push(`${what}: answered ${answer.status}, then an error escaped: ${error.split('\n')[0]}`);
        }
      }
      assert.ok(sent > 300, `only ${sent} requests were made`);
      assert.deepEqual(failures, [], `${failures.length} of ${sent} wrong-typed reviews were not answered with 200 or 400`);
      await assertNothingEscaped();
    });
  }

  test('answers wrong types in the annotations and labels the engine reads with 200 allowed or 400', async () => {
    const failures: string[] = [];
    const keys = [
      ['annotations', 'sidecar-injector.io/inject'],
      ['annotations', 'sidecar-injector.io/status'],
      ['annotations', 'sidecar-injector-webhook.morven.me/inject'],
      ['annotations', 'com.foreach/wait-for-it'],
      ['labels', 'app'],
    ];
    for (const name of ['pod-create-sleep', 'deployment-create-frontend']) {
      for (const [map, key] of keys) {
        for (const wrong of WRONG) {
          const review = loadReview(name);
          const metadata = name.startsWith('pod') ? review.request.object.metadata : review.request.object.spec.template.metadata;
          metadata[map] = { ...(metadata[map] ?? {}), [key]: structuredClone(wrong) };
          const answer = await send(JSON.stringify(review));
          try {
            assert.ok(
              answer.status === 200 || answer.status === 400,
              `${name} ${map}["${key}"] = ${JSON.stringify(wrong)}: expected 200 or 400, got ${answer.status || answer.error}: ${preview(answer.text, 300)}`,
            );
          } catch (error) {
            failures.push((error as Error).message);
          }
        }
      }
    }
    assert.deepEqual(failures, []);
    await assertNothingEscaped();
  });
});

describe('the webhook after all of the above', () => {
  test('is alive and answers a recorded review exactly as the engine does', async () => {
    const health = await opsRequest(webhook.opsPort, '/healthz');
    assert.equal(health.status, 200);
    const review = loadReview('pod-create-sleep');
    const answer = await send(JSON.stringify(review));
    assert.equal(answer.status, 200, answer.text);
    const response = JSON.parse(answer.text).response;
    const expected = evaluate(review.request, resolveInjectorConfig(CONFIG)).response;
    assert.equal(response.uid, review.request.uid);
    assert.deepEqual(decodePatch(response), decodePatch(expected));
    const patched = applyResponse(review.request.object, response);
    assert.deepEqual(names(podOf(patched).spec.containers), ['sleep', 'helper', 'envoy', 'sidecar-nginx']);
  });

  test('logged no internal error and counted no 5xx outcome', async () => {
    const metrics = await opsRequest(webhook.opsPort, '/metrics');
    const errors = metrics.text.split('\n').filter((line) => line.startsWith('sidecar_injector_admission_requests_total{outcome="error"}'));
    assert.deepEqual(errors, [], 'requests answered with a 5xx');
    const internalErrors = webhook.logs.filter((line) => JSON.parse(line).level === 'error');
    assert.deepEqual(internalErrors.map((line) => preview(line, 300)), [], 'error-level log lines');
    await assertNothingEscaped();
  });
});
