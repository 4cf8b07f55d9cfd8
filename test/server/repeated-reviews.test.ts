// Reviews that repeat an earlier one but for their uid (a ReplicaSet's pods) are answered with the
// earlier answer and their own uid, without being parsed or evaluated (repeated-reviews.ts). Driven
// through the handler without sockets: every answer must be byte for byte what the long way answers,
// and anything that is not certainly a repeat must take the long way.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { type ResolvedInjectorConfig, memorySizing, resolveInjectorConfig } from '../../webhook/config';
import { createAdmissionHandler } from '../../webhook/server/admission-handler';
import { createLogger } from '../../webhook/server/logger';
import { MemoryBudget } from '../../webhook/server/memory-budget';
import { WebhookMetrics } from '../../webhook/server/metrics';
import { REPEATED_REVIEW_BOUNDS, RepeatedReviews, requestIsNamed, requestUidSpan, reviewKey } from '../../webhook/server/repeated-reviews';
import { type Review, asUnnamed, loadReview, reviewNames } from '../support/recorded-reviews';

const CONFIG = resolveInjectorConfig({ injections: DEFAULT_INJECTIONS });

interface Sent {
  status: number;
  body: string;
}

/** A handler driven without sockets; `config` may be swapped between requests. */
function harness(initial: ResolvedInjectorConfig = CONFIG) {
  let config = initial;
  const budget = new MemoryBudget(memorySizing(192 * 1024 * 1024));
  const lines: string[] = [];
  const logger = createLogger('info', (text) => lines.push(...text.split('\n').filter(Boolean)));
  const metrics = new WebhookMetrics(budget, logger);
  const handle = createAdmissionHandler({ config: () => config, metrics, logger, budget });
  /** Sends `body` and resolves with the answer once the turn that answers it has run. */
  const send = async (body: string): Promise<Sent> => {
    const sent: Sent = { status: 0, body: '' };
    const bytes = Buffer.from(body);
    const req = Object.assign(new EventEmitter(), { headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) } });
    const res = {
      headersSent: false,
      destroyed: false,
      socket: {},
      writeHead(status: number) {
        sent.status = status;
        this.headersSent = true;
        return this;
      },
      end(text: string) {
        sent.body = text;
      },
    };
    handle(req as unknown as IncomingMessage, res as unknown as ServerResponse);
    req.emit('data', bytes);
    req.emit('end');
    await new Promise((resolve) => setImmediate(resolve));
    // The log is flushed on a later turn.
    await new Promise((resolve) => setImmediate(resolve));
    return sent;
  };
  return {
    send,
    metrics,
    lines,
    setConfig: (next: ResolvedInjectorConfig) => {
      config = next;
    },
  };
}

function withUid(review: Review, uid: string): string {
  const copy = structuredClone(review);
  copy.request.uid = uid;
  return JSON.stringify(copy);
}

/** What a handler that never saw a review before answers for `body`. */
async function longWay(body: string, config: ResolvedInjectorConfig = CONFIG): Promise<Sent> {
  return harness(config).send(body);
}

describe('reviews that repeat but for their uid', () => {
  test('every recorded review, unnamed and repeated with a new uid, gets byte for byte the answer the long way gives it', async () => {
    for (const name of reviewNames()) {
      const review = asUnnamed(loadReview(name));
      const { send, metrics } = harness();
      const first = await send(withUid(review, '11111111-1111-4111-8111-111111111111'));
      assert.equal(first.status, 200, `${name}: ${first.body.slice(0, 200)}`);
      const repeat = withUid(review, '22222222-2222-4222-8222-222222222222');
      const again = await send(repeat);
      assert.equal(metrics.repeatedReviews, 1, `${name}: the second was answered as a repeat (its body starts as the apiserver writes it)`);
      assert.equal(again.status, 200);
      assert.equal(again.body, (await longWay(repeat)).body, `${name}: the same answer as the long way`);
      assert.equal(JSON.parse(again.body).response.uid, '22222222-2222-4222-8222-222222222222');
    }
  });

  test('a named object\'s review is answered the long way every time, and a stream of them leaves the kept answers alone', async () => {
    // Named: the recorded reviews as recorded, all but the ReplicaSet's pod (named from its generateName after admission).
    const named = reviewNames().filter((name) => loadReview(name).request.name !== undefined);
    assert.ok(named.length >= 8, `the recorded named reviews: ${named.join(', ')}`);
    for (const name of named) {
      const review = loadReview(name);
      const { send, metrics } = harness();
      for (const uid of ['u-1', 'u-2']) {
        const body = withUid(review, uid);
        const answer = await send(body);
        assert.equal(answer.status, 200, name);
        assert.equal(answer.body, (await longWay(body)).body, `${name} ${uid}: the long way's answer`);
      }
      assert.equal(metrics.repeatedReviews, 0, `${name}: not looked up`);
    }
    // More bare pods than the kept answers may hold, between two pods of one ReplicaSet: had they been
    // kept, the answers would have been started over and the second pod missed.
    const { send, metrics } = harness();
    const replicaSetPod = loadReview('pod-create-worker-');
    await send(withUid(replicaSetPod, 'rs-1'));
    const sleep = loadReview('pod-create-sleep');
    for (let i = 0; i < REPEATED_REVIEW_BOUNDS.maxEntries + 10; i++) {
      const pod = structuredClone(sleep);
      pod.request.name = pod.request.object.metadata.name = `sleep-${i}`;
      assert.equal((await send(withUid(pod, `bare-${i}`))).status, 200);
    }
    await send(withUid(replicaSetPod, 'rs-2'));
    assert.equal(metrics.repeatedReviews, 1, "the ReplicaSet's second pod was answered from the first's answer");
  });

  test('the admission line of a repeat says its own uid and the workload of the review', async () => {
    const review = loadReview('pod-create-worker-');
    const { send, lines } = harness();
    await send(withUid(review, 'uid-1'));
    await send(withUid(review, 'uid-2'));
    const [a, b] = lines.filter((line) => line.includes('"msg":"admission"')).map((line) => JSON.parse(line));
    assert.equal(b.uid, 'uid-2');
    const { uid: _a, time: _t1, durationMs: _d1, ...restA } = a;
    const { uid: _b, time: _t2, durationMs: _d2, ...restB } = b;
    assert.deepEqual(restB, restA);
    assert.equal(restB.name, 'worker-');
  });

  test('one byte changed anywhere but the uid, and the review is evaluated as itself', async () => {
    const review = asUnnamed(loadReview('pod-create-sleep'));
    const { send, metrics } = harness();
    await send(withUid(review, 'uid-1'));
    const changed = structuredClone(review);
    changed.request.object.metadata.annotations['sidecar-injector.io/inject'] = 'false';
    const body = withUid(changed, 'uid-2');
    const answer = await send(body);
    assert.equal(metrics.repeatedReviews, 0);
    assert.equal(answer.body, (await longWay(body)).body);
    assert.equal(JSON.parse(answer.body).response.patch, undefined, 'opted out: no patch, unlike the first');
  });

  test('a pod created a second later repeats the one before: managedFields (their times) are not part of the key', async () => {
    const review = loadReview('pod-create-worker-');
    assert.ok(review.request.object.metadata.managedFields?.[0]?.time, 'the recorded review carries managedFields with a time');
    const { send, metrics } = harness();
    await send(withUid(review, 'uid-1'));
    const later = structuredClone(review);
    later.request.object.metadata.managedFields[0].time = '2099-01-01T00:00:01Z';
    const body = withUid(later, 'uid-2');
    const answer = await send(body);
    assert.equal(metrics.repeatedReviews, 1, 'answered as a repeat');
    assert.equal(answer.body, (await longWay(body)).body, 'with the answer the long way gives it');
  });

  test('after a config change a repeat is answered under the new config', async () => {
    const review = asUnnamed(loadReview('pod-create-sleep'));
    const { send, metrics, setConfig } = harness();
    await send(withUid(review, 'uid-1'));
    const disabled = resolveInjectorConfig({ injections: DEFAULT_INJECTIONS, enabled: false });
    setConfig(disabled);
    const body = withUid(review, 'uid-2');
    const answer = await send(body);
    assert.equal(metrics.repeatedReviews, 0);
    assert.equal(answer.body, (await longWay(body, disabled)).body);
    // Kept again under the new config.
    await send(withUid(review, 'uid-3'));
    assert.equal(metrics.repeatedReviews, 1);
  });

  test('a body whose uid is not certainly the one at the front is never remembered', async () => {
    const review = asUnnamed(loadReview('pod-create-sleep'));
    const compact = (uid: string) => withUid(review, uid);
    // JSON.parse keeps the last of two members of one name. The first review's uid is u-1 at the front
    // and again later; the second's front uid is u-2, but the uid it carries is the later u-1: a
    // remembered first answer would answer it with u-2.
    const cases: Record<string, (uid: string) => string> = {
      'a second uid member': (uid) => compact(uid).replace('"operation":"CREATE"', '"operation":"CREATE","uid":"u-1"'),
      'a second request member': (uid) => compact(uid).replace(/}$/, `,"request":${JSON.stringify({ ...review.request, uid: 'u-1' })}}`),
      'a second uid member of another value': (uid) => compact(uid).replace('"operation":"CREATE"', '"operation":"CREATE","uid":"last"'),
    };
    for (const [what, body] of Object.entries(cases)) {
      const { send, metrics } = harness();
      for (const uid of ['u-1', 'u-2']) {
        const text = body(uid);
        const answer = await send(text);
        assert.equal(answer.body, (await longWay(text)).body, `${what}: ${uid} answered the long way`);
      }
      assert.equal(metrics.repeatedReviews, 0, what);
    }
  });

  test('bodies not written as the apiserver writes them are answered the long way every time', async () => {
    const review = asUnnamed(loadReview('pod-create-sleep'));
    const reordered = (uid: string) => JSON.stringify({ apiVersion: review.apiVersion, kind: review.kind, request: { ...review.request, uid } });
    const indented = (uid: string) => JSON.stringify(JSON.parse(withUid(review, uid)), null, 1);
    for (const body of [reordered, indented]) {
      const { send, metrics } = harness();
      for (const uid of ['u-1', 'u-2', 'u-3']) assert.equal((await send(body(uid))).status, 200);
      assert.equal(metrics.repeatedReviews, 0);
    }
  });

  test('a refused review is not remembered: its repeat is refused with its own uid', async () => {
    const { send, metrics } = harness();
    const notReview = (uid: string) => `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"${uid}","kind":"Pod"}}`;
    for (const uid of ['u-1', 'u-2']) {
      const answer = await send(notReview(uid));
      assert.equal(answer.status, 400);
      assert.equal(JSON.parse(answer.body).error.uid, uid);
    }
    assert.equal(metrics.repeatedReviews, 0);
  });
});

describe('the uid span and the key', () => {
  const front = '{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"';
  test('found only where the apiserver puts it, and only for uid-shaped values', () => {
    assert.deepEqual(requestUidSpan(Buffer.from(`${front}0f1e-AB9"}}`)), { apiVersion: 'admission.k8s.io/v1', start: front.length, end: front.length + 8, uid: '0f1e-AB9' });
    const beta = front.replace('/v1"', '/v1beta1"');
    assert.equal(requestUidSpan(Buffer.from(`${beta}abc"}}`))?.apiVersion, 'admission.k8s.io/v1beta1');
    for (const body of [
      `${front}"}}`, // empty
      `${front}a\\u0062"}}`, // an escape
      `${front}a b"}}`,
      `${front}${'a'.repeat(129)}"}}`, // longer than any uid
      `${front}abc`, // cut off
      front.replace('"kind":"AdmissionReview",', '') + 'abc"}}',
      ` ${front}abc"}}`,
    ]) {
      assert.equal(requestUidSpan(Buffer.from(body)), undefined, body);
    }
    assert.equal(requestUidSpan(Buffer.from(`${front}${'a'.repeat(128)}"}}`))?.uid.length, 128);
  });

  test("a request is named when its name member comes after the uid and before its operation, as Go writes it", () => {
    const named = (text: string) => {
      const body = Buffer.from(text);
      return requestIsNamed(body, requestUidSpan(body)!);
    };
    const gvk = '"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"}';
    assert.equal(named(`${front}u-1",${gvk},"name":"sleep","namespace":"shop","operation":"CREATE","object":{"metadata":{"name":"sleep"}}}}`), true);
    assert.equal(named(`${front}u-1",${gvk},"subResource":"status","name":"sleep","operation":"UPDATE"}}`), true);
    assert.equal(named(`${front.replace('/v1"', '/v1beta1"')}u-1",${gvk},"name":"sleep","operation":"CREATE"}}`), true);
    // Not named: a name only inside the object (a container's, an owner's), or no operation to bound the search.
    assert.equal(named(`${front}u-1",${gvk},"namespace":"shop","operation":"CREATE","object":{"metadata":{"generateName":"web-","ownerReferences":[{"kind":"ReplicaSet","name":"web"}]}}}}`), false);
    assert.equal(named(`${front}u-1",${gvk},"name":"sleep"}}`), false);
    for (const name of reviewNames()) {
      const review = loadReview(name);
      assert.equal(named(JSON.stringify(review)), review.request.name !== undefined, name);
      assert.equal(named(JSON.stringify(asUnnamed(review))), false, `${name}, unnamed`);
    }
  });

  test('two bodies have one key exactly when they differ only in the uid', () => {
    const key = (text: string) => {
      const body = Buffer.from(text);
      return reviewKey(body, requestUidSpan(body)!);
    };
    assert.equal(key(`${front}abc","kind":1}}`), key(`${front}de-f0","kind":1}}`));
    assert.notEqual(key(`${front}abc","kind":1}}`), key(`${front}abc","kind":2}}`));
    assert.notEqual(key(`${front}abc","kind":1}}`), key(`${front.replace('/v1"', '/v1beta1"')}abc","kind":1}}`));
  });

  test('a key is the SHA-256 of the body without the uid, whatever the body\'s size and however it is computed', () => {
    for (const size of [10, 9_000, 70_000]) {
      const body = Buffer.from(`${front}abc-1","pad":"${'x'.repeat(size)}"}}`);
      const span = requestUidSpan(body)!;
      const expected = createHash('sha256').update(body.subarray(0, span.start)).update(body.subarray(span.end)).digest('binary');
      assert.equal(reviewKey(body, span), expected, `${body.length} bytes`);
    }
    // A smaller body after a larger one: nothing of the larger one's bytes is hashed.
    const small = Buffer.from(`${front}abc-1","kind":1}}`);
    assert.equal(reviewKey(small, requestUidSpan(small)!), createHash('sha256').update(Buffer.from(`${front}","kind":1}}`)).digest('binary'));
  });

  test('the kept answers stay within their bounds under ever-new reviews, checked before each one goes in', () => {
    const cache = new RepeatedReviews();
    let most = 0;
    for (let i = 0; i < 3000; i++) {
      const long = i % 7 === 0;
      cache.remember(`key-${i}`, CONFIG, {
        request: { kind: 'Pod', namespace: 'ns', name: `pod-${i}-`.padEnd(long ? 250 : 10, 'x'), operation: 'CREATE', dryRun: false },
        decisions: [],
        podWarnings: [],
        patched: true,
        warnings: undefined,
        tail: { text: 'x'.repeat(long ? 20_000 : 1_500), bytes: long ? 20_000 : 1_500 },
      });
      const { entries, bytes } = cache.size;
      assert.ok(entries <= REPEATED_REVIEW_BOUNDS.maxEntries && bytes <= REPEATED_REVIEW_BOUNDS.maxBytes, `${entries} entries, ${bytes} bytes after ${i + 1}`);
      most = Math.max(most, entries);
    }
    assert.ok(most > 100, `it did keep answers (${most} at most)`);
    const huge = { text: 'x'.repeat(REPEATED_REVIEW_BOUNDS.maxItemBytes), bytes: REPEATED_REVIEW_BOUNDS.maxItemBytes };
    cache.remember('huge', CONFIG, { request: { kind: 'Pod', namespace: undefined, name: undefined, operation: 'CREATE', dryRun: false }, decisions: [], podWarnings: [], patched: true, warnings: undefined, tail: huge });
    assert.equal(cache.get('huge'), undefined, 'an answer larger than one item may be is not kept');
  });
});
