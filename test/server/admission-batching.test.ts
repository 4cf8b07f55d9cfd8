// Small admission bodies that arrive in the same turn of the event loop are answered together, stage
// by stage (all parsed, then all evaluated, then all sent). Driven here without sockets, through the
// handler itself, so the turn is exact: each answer must still be its own request's, a bad body must
// not touch the others, and a large body must not wait for anything.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { SMALL_BODY_BYTES, memorySizing, resolveInjectorConfig } from '../../webhook/config';
import { decodeAdmissionReview, evaluate } from '../../webhook/engine';
import { createAdmissionHandler } from '../../webhook/server/admission-handler';
import { createLogger } from '../../webhook/server/logger';
import { MemoryBudget } from '../../webhook/server/memory-budget';
import { WebhookMetrics } from '../../webhook/server/metrics';
import { loadReview } from '../support/recorded-reviews';

const config = resolveInjectorConfig({ injections: DEFAULT_INJECTIONS });

/** What the handler sent on one response. */
interface Answered {
  status: number;
  body: string;
  /** How many config() calls (one per review evaluated) had been made when this was sent. */
  evaluatedBefore: number;
}

function harness(options: { failOnEvaluation?: number } = {}) {
  let evaluated = 0;
  const budget = new MemoryBudget(memorySizing(192 * 1024 * 1024));
  const logger = createLogger('info', () => undefined);
  const handle = createAdmissionHandler({
    config: () => {
      evaluated++;
      if (evaluated === options.failOnEvaluation) throw new Error('config store exploded');
      return config;
    },
    metrics: new WebhookMetrics(budget, logger),
    logger,
    budget,
  });
  /** Starts a request and delivers its whole body at once; the answer is filled in when sent. */
  const request = (body: string): Answered => {
    const answered: Answered = { status: 0, body: '', evaluatedBefore: -1 };
    const bytes = Buffer.from(body);
    const req = Object.assign(new EventEmitter(), { headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) } });
    const res = {
      headersSent: false,
      destroyed: false,
      shouldKeepAlive: true,
      writeHead(status: number) {
        answered.status = status;
        answered.evaluatedBefore = evaluated;
        this.headersSent = true;
        return this;
      },
      end(text: string) {
        answered.body = text;
      },
      setHeader() {},
    };
    handle(req as unknown as IncomingMessage, res as unknown as ServerResponse);
    req.emit('data', bytes);
    req.emit('end');
    return answered;
  };
  return { request, budget, evaluatedCount: () => evaluated };
}

function reviewWithUid(uid: string) {
  const review = loadReview('pod-create-sleep');
  review.request.uid = uid;
  return review;
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('admission requests answered in batches', () => {
  test('reviews of one turn are each answered with their own uid and patch, after all of them were evaluated; a bad body among them gets its own 400', async () => {
    const { request, budget } = harness();
    const good = ['uid-a', 'uid-b', 'uid-c'].map((uid) => ({ uid, answered: request(JSON.stringify(reviewWithUid(uid))) }));
    const garbage = request('{"not json');
    const notReview = request(JSON.stringify({ kind: 'AdmissionReview', apiVersion: 'admission.k8s.io/v1', request: { uid: 'uid-bad', kind: 'Pod' } }));
    for (const answered of [...good.map((g) => g.answered), garbage, notReview]) assert.equal(answered.status, 0, 'nothing is answered before the turn ends');
    assert.ok(budget.held > 0, 'the bodies are held while they wait');

    await nextTurn();
    for (const { uid, answered } of good) {
      assert.equal(answered.status, 200, `${uid}: ${answered.body.slice(0, 200)}`);
      const expected = evaluate(decodeAdmissionReview(reviewWithUid(uid)).request, config).response;
      assert.deepEqual(JSON.parse(answered.body).response, expected, `${uid}: its own answer`);
      assert.equal(answered.evaluatedBefore, 3, `${uid}: sent after every review of the turn was evaluated`);
    }
    assert.equal(garbage.status, 400);
    assert.match(JSON.parse(garbage.body).error.message, /body is not JSON/);
    assert.equal(notReview.status, 400);
    assert.deepEqual(JSON.parse(notReview.body).error.uid, 'uid-bad', 'the refusal carries its own uid');
    assert.equal(budget.held, 0, 'every body given back');
  });

  test('a body over SMALL_BODY_BYTES is answered at once, not held until the turn ends', () => {
    const { request, budget } = harness();
    const review = reviewWithUid('uid-large');
    review.request.object.metadata.annotations['example.com/padding'] = 'x'.repeat(SMALL_BODY_BYTES);
    const small = request(JSON.stringify(reviewWithUid('uid-small')));
    const large = request(JSON.stringify(review));
    assert.equal(large.status, 200, large.body.slice(0, 200));
    assert.equal(JSON.parse(large.body).response.uid, 'uid-large');
    assert.equal(small.status, 0, 'the small one still waits for its turn');
    assert.ok(budget.held > 0 && budget.held < SMALL_BODY_BYTES, 'only the small body is still held');
  });

  test('an internal error in one admission of a batch refuses that one with 500; the others are answered and every body is given back', async () => {
    const { request, budget } = harness({ failOnEvaluation: 2 });
    const answered = ['uid-1', 'uid-2', 'uid-3'].map((uid) => request(JSON.stringify(reviewWithUid(uid))));
    await nextTurn();
    assert.deepEqual(
      answered.map((a) => a.status),
      [200, 500, 200],
    );
    assert.match(JSON.parse(answered[1].body).error.message, /internal error: config store exploded/);
    assert.equal(JSON.parse(answered[1].body).error.uid, 'uid-2');
    assert.equal(JSON.parse(answered[2].body).response.uid, 'uid-3');
    assert.equal(budget.held, 0);
  });

  test('a turn with one review answers it alone, on the next turn', async () => {
    const { request, evaluatedCount } = harness();
    const answered = request(JSON.stringify(reviewWithUid('uid-alone')));
    assert.equal(evaluatedCount(), 0);
    await nextTurn();
    assert.equal(answered.status, 200);
    assert.equal(JSON.parse(answered.body).response.uid, 'uid-alone');
  });
});
