// The webhook port over HTTP/2, as the apiserver's webhook client speaks it when ALPN offers `h2`:
// admissions multiplexed on one session, and the defences of HTTP/1.1 held per stream (slow bodies
// answered 408 with the session kept, a client's reset giving back the body's budget, the stream cap
// across sessions making room by resetting a stream that waits on its client).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import { InjectorConfig, generateWebhookCertificate } from '../../charts/engine';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { InProcessWebhook, TEST_SERVER_NAME, startInProcess, until } from '../support/webhook-harness';
import { applyResponse, loadReview, podOf } from '../support/recorded-reviews';

const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
const CONFIG: InjectorConfig = { injections: DEFAULT_INJECTIONS };
/** The connection cap of these tests' server, and so its cap on streams in flight. */
const MAX_CONNECTIONS = 16;

function connect(port: number): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`https://127.0.0.1:${port}`, { ca: certificate.caCertificate, servername: TEST_SERVER_NAME });
    session.once('connect', () => resolve(session));
    session.once('error', reject);
  });
}

interface Answer {
  status: number;
  text: string;
  rstCode: number | undefined;
}

/** Reads a stream's answer, at its close: what came, and the stream's reset code (0 for a normal close). */
function answerOf(stream: http2.ClientHttp2Stream): Promise<Answer> {
  return new Promise((resolve) => {
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (headers) => (status = Number(headers[':status'])));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', () => undefined);
    stream.on('close', () => resolve({ status, text: Buffer.concat(chunks).toString('utf8'), rstCode: stream.rstCode }));
  });
}

function post(session: http2.ClientHttp2Session, body: Buffer, headers: http2.OutgoingHttpHeaders = {}): http2.ClientHttp2Stream {
  return session.request({
    ':method': 'POST',
    ':path': '/mutate?timeout=10s',
    'content-type': 'application/json',
    'content-length': body.length,
    ...headers,
  });
}

function review(uid: string): Buffer {
  const recorded = loadReview('pod-create-sleep');
  recorded.request.uid = uid;
  return Buffer.from(JSON.stringify(recorded));
}

/** One whole admission on `session`: the recorded pod's review with `uid`, and its answer. */
function admit(session: http2.ClientHttp2Session, uid: string): Promise<Answer> {
  const body = review(uid);
  const stream = post(session, body);
  stream.end(body);
  return answerOf(stream);
}

describe('the webhook port over HTTP/2', () => {
  let webhook: InProcessWebhook;
  before(async () => {
    webhook = await startInProcess(CONFIG, certificate, { maxConnections: MAX_CONNECTIONS });
  });
  after(async () => {
    await webhook.stop();
  });

  test('ALPN offers h2, and admissions multiplexed on one session are each answered with their own patch', async () => {
    const session = await connect(webhook.port);
    try {
      assert.equal(session.alpnProtocol, 'h2');
      const uids = Array.from({ length: MAX_CONNECTIONS - 4 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
      const answers = await Promise.all(
        uids.map((uid) => admit(session, uid)),
      );
      const pod = podOf(loadReview('pod-create-sleep').request.object);
      for (const [i, answer] of answers.entries()) {
        assert.equal(answer.status, 200, answer.text);
        const parsed = JSON.parse(answer.text);
        assert.equal(parsed.response.uid, uids[i]);
        const patched = applyResponse(pod, parsed.response);
        assert.ok(patched.spec.containers.some((c: { name: string }) => c.name === 'envoy'), 'Envoy is injected');
      }
    } finally {
      session.close();
    }
  });

  test('a stream whose body arrives too slowly is answered 408 and reset; its session keeps serving', async () => {
    const session = await connect(webhook.port);
    try {
      const before = webhook.server.streamsReset.slow_body;
      const slow = post(session, Buffer.alloc(5000));
      slow.write('{"a":"bbb"');
      const cut = await answerOf(slow);
      assert.equal(cut.status, 408, cut.text);
      assert.match(cut.text, /slower than 8192 bytes per second/);
      assert.equal(webhook.server.streamsReset.slow_body, before + 1);
      assert.equal((await admit(session, '00000000-0000-4000-8000-000000000408')).status, 200);
      await until('the slow body given back to the memory budget', 5_000, async () => (webhook.server.budget.held === 0 ? true : undefined));
    } finally {
      session.close();
    }
  });

  test('a client that resets its stream mid-body gets nothing and the budget gets its bytes back', async () => {
    const session = await connect(webhook.port);
    try {
      const body = review('00000000-0000-4000-8000-000000000001');
      const stream = post(session, body);
      stream.write(body.subarray(0, 100));
      await until('the body taken into the memory budget', 5_000, async () => (webhook.server.budget.held > 0 ? true : undefined));
      stream.close(http2.constants.NGHTTP2_CANCEL);
      await until('the reset body given back to the memory budget', 5_000, async () => (webhook.server.budget.held === 0 ? true : undefined));
      assert.equal((await admit(session, '00000000-0000-4000-8000-000000000002')).status, 200);
    } finally {
      session.close();
    }
  });

  test('a body longer than the limit is refused 413 from its declared length, the stream reset, the session kept', async () => {
    const session = await connect(webhook.port);
    try {
      const stream = post(session, Buffer.alloc(0), { 'content-length': 8 * 1024 * 1024 });
      stream.write(Buffer.alloc(1024, 0x20));
      const answer = await answerOf(stream);
      assert.equal(answer.status, 413, answer.text);
      assert.equal((await admit(session, '00000000-0000-4000-8000-000000000413')).status, 200);
    } finally {
      session.close();
    }
  });

  test('headers over the limit are refused without taking the session down', async () => {
    const session = await connect(webhook.port);
    try {
      const stream = post(session, Buffer.from('{}'), { 'x-padding': 'x'.repeat(16 * 1024) });
      stream.end('{}');
      const answer = await answerOf(stream);
      assert.notEqual(answer.status, 200);
    } finally {
      session.destroy();
    }
    // A new session is served (nghttp2 may close the one that sent them).
    const fresh = await connect(webhook.port);
    try {
      assert.equal((await admit(fresh, '00000000-0000-4000-8000-000000000431')).status, 200);
    } finally {
      fresh.close();
    }
  });

  test('at the stream cap a new admission resets the oldest stream waiting for its body, of the heaviest source', async () => {
    const holder = await connect(webhook.port);
    const apiserver = await connect(webhook.port);
    try {
      const before = webhook.server.streamsReset.evicted;
      // Every stream the cap allows, each waiting for the rest of its body.
      const held = Array.from({ length: MAX_CONNECTIONS }, () => {
        const stream = post(holder, Buffer.alloc(5000));
        stream.write('{');
        return answerOf(stream);
      });
      await until('the holder streams in flight', 5_000, async () => ((await streamsInFlight(webhook)) === MAX_CONNECTIONS ? true : undefined));
      const answer = await admit(apiserver, '00000000-0000-4000-8000-000000000cab');
      assert.equal(answer.status, 200, answer.text);
      assert.equal(webhook.server.streamsReset.evicted, before + 1);
      const first = await held[0];
      assert.equal(first.rstCode, http2.constants.NGHTTP2_CANCEL, 'the oldest held stream was the one reset');
    } finally {
      holder.destroy();
      apiserver.close();
    }
  });
});

async function streamsInFlight(webhook: InProcessWebhook): Promise<number> {
  const text = await webhook.server.metrics.render();
  return Number(/^sidecar_injector_http2_streams_in_flight (\d+)/m.exec(text)?.[1] ?? -1);
}
