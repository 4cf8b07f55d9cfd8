// Requests pipelined on one connection are all answered, in order: the apiserver does not pipeline,
// but a client that does must not see its connection reset by the server's own backpressure.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as tls from 'node:tls';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { generateWebhookCertificate } from '../../charts/engine';
import { loadReview } from '../support/recorded-reviews';
import { InProcessWebhook, TEST_SERVER_NAME, startInProcess } from '../support/webhook-harness';

const COUNT = 2000;

describe('pipelined admission requests', () => {
  let webhook: InProcessWebhook;
  let ca: string;

  before(async () => {
    const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
    ca = certificate.caCertificate;
    webhook = await startInProcess({ injections: DEFAULT_INJECTIONS }, certificate);
  });

  after(async () => {
    await webhook?.stop();
  });

  test(`${COUNT} reviews written at once on one TLS connection get ${COUNT} answers, 200 each, in order`, async () => {
    const review = loadReview('pod-create-sleep') as any;
    let requests = '';
    for (let i = 0; i < COUNT; i++) {
      const body = JSON.stringify({ ...review, request: { ...review.request, uid: `pipelined-${i}` } });
      requests += `POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    }
    const received = await new Promise<string>((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port: webhook.port, ca, servername: TEST_SERVER_NAME });
      let text = '';
      socket.on('secureConnect', () => socket.write(requests));
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        // Every answer is in once the last uid is.
        if (text.includes(`"uid":"pipelined-${COUNT - 1}"`)) socket.end();
      });
      socket.on('close', () => resolve(text));
      socket.on('error', () => undefined);
    });
    const statuses = received.match(/HTTP\/1\.1 \d+/g) ?? [];
    const uids = [...received.matchAll(/"uid":"(pipelined-\d+)"/g)].map((match) => match[1]);
    const wrong = statuses.filter((status) => status !== 'HTTP/1.1 200');
    assert.equal(statuses.length, COUNT, `expected ${COUNT} answers, got ${statuses.length} (then the connection closed); log tail:\n${webhook.logs.slice(-2).join('')}`);
    assert.deepEqual(wrong, [], 'every answer is 200');
    assert.deepEqual(uids, Array.from({ length: COUNT }, (_, i) => `pipelined-${i}`), 'the answers come in the order of the requests, each with its uid');
  });
});
