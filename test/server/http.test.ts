// The webhook as the apiserver meets it: real HTTPS against the in-process server, recorded
// AdmissionReviews, and every kind of bad input a broken or hostile client can send.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as diagnostics from 'node:diagnostics_channel';
import * as https from 'node:https';
import type { Socket } from 'node:net';
import * as tls from 'node:tls';
import { InjectorConfig, generateWebhookCertificate } from '../../charts/engine';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { HttpsResult, InProcessWebhook, TEST_SERVER_NAME, httpsRequest, keepAliveAgent, postAdmission, startInProcess, opsRequest, until } from '../support/webhook-harness';
import { Review, applyResponse, decodePatch, loadReview, names, podOf, reviewNames } from '../support/recorded-reviews';
import { resolveInjectorConfig } from '../../charts/engine';
import { decodeAdmissionReview, evaluate } from '../../webhook/engine';

function loadReviewWithUid(name: string, uid: string): Review {
  const review = loadReview(name);
  review.request.uid = uid;
  return review;
}

const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
const ca = certificate.caCertificate;
const CONFIG: InjectorConfig = { injections: DEFAULT_INJECTIONS };
const MAX_BODY_BYTES = 7 * 1024 * 1024;
const MiB = 1024 * 1024;

/**
 * One request with full control over the headers and the framing (`chunked` sends the body in
 * pieces with Transfer-Encoding: chunked and no Content-Length). Like the apiserver's client, an
 * error writing the body after the response has arrived does not lose the response.
 */
function rawRequest(
  port: number,
  options: { path?: string; method?: string; headers: Record<string, string>; body?: Buffer; chunked?: boolean },
): Promise<HttpsResult> {
  return new Promise((resolve, reject) => {
    let responded = false;
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: options.path ?? '/mutate',
        method: options.method ?? 'POST',
        ca,
        servername: TEST_SERVER_NAME,
        agent: false,
        headers: options.chunked ? { ...options.headers, 'Transfer-Encoding': 'chunked' } : options.headers,
      },
      (res) => {
        responded = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const finish = () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
        };
        res.on('end', finish);
        // The server may close the connection right after a 413: what was read still counts.
        res.on('aborted', finish);
        res.on('error', finish);
      },
    );
    req.on('error', (error) => {
      if (!responded) reject(new Error(`no response: ${(error as NodeJS.ErrnoException).code ?? ''} ${error.message}`));
    });
    if (options.body === undefined) {
      req.end();
    } else if (options.chunked) {
      for (let offset = 0; offset < options.body.length; offset += MiB) req.write(options.body.subarray(offset, offset + MiB));
      req.end();
    } else {
      req.end(options.body);
    }
  });
}

/** Asserts an HTTP error answer: the status, and a JSON error whose message says what is wrong. */
function assertRejected(result: HttpsResult, status: number, message: RegExp): void {
  let body: any;
  try {
    body = result.json();
  } catch {
    assert.fail(`expected HTTP ${status} with a JSON error matching ${message}, got HTTP ${result.status} with a non-JSON body ${JSON.stringify(result.text.slice(0, 300))}`);
  }
  assert.equal(result.status, status, `expected HTTP ${status} (${message}), got HTTP ${result.status}: ${result.text.slice(0, 300)}`);
  assert.equal(body?.error?.code, status, `expected error.code ${status} in the body, got ${JSON.stringify(body).slice(0, 300)}`);
  assert.match(String(body?.error?.message), message, `expected the error message to say ${message}, got ${JSON.stringify(body?.error?.message)}`);
}

/** The response of an answered AdmissionReview, after checking the envelope. */
function admissionResponse(result: HttpsResult, review: Review): any {
  assert.equal(result.status, 200, `expected HTTP 200 for ${review.request.uid}, got ${result.status}: ${result.text.slice(0, 300)}`);
  const body = result.json();
  assert.equal(body.kind, 'AdmissionReview', `expected an AdmissionReview back, got kind ${JSON.stringify(body.kind)}`);
  assert.equal(body.apiVersion, review.apiVersion, `expected the request's apiVersion ${review.apiVersion} back, got ${body.apiVersion}`);
  assert.equal(body.response?.uid, review.request.uid, `expected the request uid ${review.request.uid} echoed, got ${body.response?.uid}`);
  return body.response;
}

function containerNames(object: unknown): { containers: string[]; initContainers: string[] } {
  const pod = podOf(object);
  return { containers: names(pod.spec.containers), initContainers: names(pod.spec.initContainers) };
}

/** The value of one series (`name{labels}`) in Prometheus text, or undefined when absent. */
function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** A recorded review with a fresh uid, so its answer and its log lines can be told apart. */
function freshReview(name: string, uid: string): Review {
  const review = loadReview(name);
  review.request.uid = uid;
  return review;
}

/** A recorded pod review padded with one big annotation to exactly `bytes` bytes of JSON. */
function paddedReview(bytes: number): Buffer {
  const review = freshReview('pod-create-sleep', 'padded-review');
  review.request.object.metadata.annotations['example.com/padding'] = '';
  const unpadded = Buffer.byteLength(JSON.stringify(review));
  review.request.object.metadata.annotations['example.com/padding'] = 'x'.repeat(bytes - unpadded);
  const body = Buffer.from(JSON.stringify(review));
  assert.equal(body.length, bytes, `padding arithmetic: wanted ${bytes} bytes, built ${body.length}`);
  return body;
}

/** Completes a TLS handshake with the given client options; resolves with the protocol agreed. */
function handshake(port: number, options: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: TEST_SERVER_NAME, ca, ...options }, () => {
      const protocol = socket.getProtocol() ?? 'unknown';
      socket.end();
      resolve(protocol);
    });
    socket.on('error', reject);
  });
}

describe('the webhook server over HTTPS', () => {
  let webhook: InProcessWebhook;
  let port: number;
  let opsPort: number;
  const post = (review: unknown) => postAdmission(port, review, { ca });
  const send = (body: string, headers: Record<string, string> = {}) => httpsRequest(port, '/mutate', body, { ca, headers });

  before(async () => {
    webhook = await startInProcess(CONFIG, certificate);
    port = webhook.port;
    opsPort = webhook.opsPort;
  });
  after(async () => {
    await webhook?.stop();
  });

  describe('POST /mutate with bad input', () => {
    test('rejects an empty body with 400', async () => {
      assertRejected(await send(''), 400, /body is empty/);
    });

    test('rejects a body that is not JSON with 400', async () => {
      assertRejected(await send('{"kind": "AdmissionReview", '), 400, /not JSON/);
    });

    test('rejects a JSON array with 400', async () => {
      assertRejected(await send(JSON.stringify([loadReview('pod-create-sleep')])), 400, /must be a JSON object/);
    });

    test('rejects a JSON string with 400', async () => {
      assertRejected(await send('"AdmissionReview"'), 400, /must be a JSON object/);
    });

    test('rejects a JSON number with 400', async () => {
      assertRejected(await send('42'), 400, /must be a JSON object/);
    });

    test('rejects an empty object with 400 naming the missing kind', async () => {
      assertRejected(await send('{}'), 400, /kind must be "AdmissionReview", got nothing/);
    });

    test('rejects a review of the wrong kind with 400', async () => {
      const review = loadReview('pod-create-sleep');
      review.kind = 'ConversionReview';
      assertRejected(await post(review), 400, /kind must be "AdmissionReview", got "ConversionReview"/);
    });

    test('rejects a review of an unknown apiVersion with 400', async () => {
      const review = loadReview('pod-create-sleep');
      review.apiVersion = 'admission.k8s.io/v2';
      assertRejected(await post(review), 400, /apiVersion must be one of .*admission\.k8s\.io\/v1.*got "admission\.k8s\.io\/v2"/);
    });

    test('rejects a review without a request with 400', async () => {
      const review: Partial<Review> = loadReview('pod-create-sleep');
      delete review.request;
      assertRejected(await post(review), 400, /request is missing/);
    });

    test('rejects a request without a uid with 400', async () => {
      const review = loadReview('pod-create-sleep');
      delete review.request.uid;
      assertRejected(await post(review), 400, /request\.uid is missing/);
    });

    test('rejects a request whose kind is not {group, version, kind} with 400', async () => {
      const review = loadReview('pod-create-sleep');
      review.request.kind = 'Pod';
      assertRejected(await post(review), 400, /request\.kind must be \{group, version, kind\}/);
    });

    test('echoes the request uid in the error when the body names one', async () => {
      const review = freshReview('pod-create-sleep', 'uid-of-a-malformed-request');
      review.request.kind = { kind: 'Pod' };
      const result = await post(review);
      assert.equal(result.status, 400, `expected HTTP 400, got ${result.status}: ${result.text}`);
      assert.equal(result.json().error?.uid, 'uid-of-a-malformed-request', `expected error.uid "uid-of-a-malformed-request" (the request's uid), got body ${result.text}`);
    });

    test('rejects Content-Type text/plain with 415', async () => {
      const result = await send(JSON.stringify(loadReview('pod-create-sleep')), { 'Content-Type': 'text/plain' });
      assertRejected(result, 415, /Content-Type must be application\/json, got "text\/plain"/);
    });

    test('rejects a request without a Content-Type with 415', async () => {
      const body = Buffer.from(JSON.stringify(loadReview('pod-create-sleep')));
      const result = await rawRequest(port, { headers: { 'Content-Length': String(body.length) }, body });
      assertRejected(result, 415, /Content-Type must be application\/json, got ""/);
    });

    test('rejects a body one byte over 7 MiB with 413 when Content-Length says so', async () => {
      const body = paddedReview(MAX_BODY_BYTES + 1);
      const result = await rawRequest(port, { headers: { 'Content-Type': 'application/json', 'Content-Length': String(body.length) }, body });
      // Refused on the declared length, before the body is read.
      assertRejected(result, 413, new RegExp(`body of ${MAX_BODY_BYTES + 1} bytes exceeds the limit of ${MAX_BODY_BYTES} bytes`));
    });

    test('rejects a chunked body one byte over 7 MiB with 413', async () => {
      const body = paddedReview(MAX_BODY_BYTES + 1);
      const result = await rawRequest(port, { headers: { 'Content-Type': 'application/json' }, body, chunked: true });
      // No length was declared, so it is the counting of the bytes as they arrive that refuses it.
      assertRejected(result, 413, new RegExp(`^body exceeds the limit of ${MAX_BODY_BYTES} bytes`));
    });

    test('answers a 6.5 MiB AdmissionReview with a patch', async () => {
      const body = paddedReview(Math.round(6.5 * MiB));
      const review: Review = JSON.parse(body.toString('utf8'));
      const response = admissionResponse(await send(body.toString('utf8')), review);
      assert.equal(response.allowed, true, `expected allowed, got ${JSON.stringify({ ...response, patch: undefined })}`);
      const patched = applyResponse(review.request.object, response);
      assert.deepEqual(
        containerNames(patched).containers,
        ['sleep', 'helper', 'envoy', 'sidecar-nginx'],
        `expected envoy and sidecar-nginx appended to the pod's containers; patch was ${JSON.stringify(decodePatch(response)).slice(0, 500)}`,
      );
    });

    test('answers an unknown path with 404', async () => {
      assertRejected(await httpsRequest(port, '/validate', JSON.stringify(loadReview('pod-create-sleep')), { ca }), 404, /no route for POST \/validate/);
    });

    test('answers GET /mutate with a client error, not a server error', async () => {
      const result = await httpsRequest(port, '/mutate', undefined, { ca });
      assert.ok([404, 405].includes(result.status), `expected GET /mutate to be 404 or 405, got ${result.status}: ${result.text}`);
    });

    test('still answers a recorded review correctly after all the bad input', async () => {
      const review = freshReview('pod-create-sleep', 'after-the-bad-input');
      const response = admissionResponse(await post(review), review);
      const patched = applyResponse(review.request.object, response);
      assert.deepEqual(containerNames(patched).containers, ['sleep', 'helper', 'envoy', 'sidecar-nginx'], 'expected envoy and sidecar-nginx injected');
    });
  });

  describe('health, readiness and metrics', () => {
    test('GET /healthz answers 200', async () => {
      const result = await opsRequest(opsPort, '/healthz');
      assert.equal(result.status, 200, `expected /healthz 200, got ${result.status}: ${result.text}`);
    });

    test('GET /readyz answers 200 with ready true and the config current', async () => {
      const result = await opsRequest(opsPort, '/readyz');
      assert.equal(result.status, 200, `expected /readyz 200, got ${result.status}: ${result.text}`);
      assert.deepEqual(
        { ready: result.json().ready, config: result.json().config },
        { ready: true, config: 'current' },
        `expected ready with a current config, got ${result.text}`,
      );
    });

    test('GET /metrics is Prometheus text whose counters grow with admissions', async () => {
      const scrape = async () => {
        const result = await opsRequest(opsPort, '/metrics');
        assert.equal(result.status, 200, `expected /metrics 200, got ${result.status}`);
        assert.match(String(result.headers['content-type']), /^text\/plain; version=0\.0\.4/, 'expected the Prometheus text content type');
        return result.text;
      };
      const patchedSeries = 'sidecar_injector_admission_requests_total{outcome="patched"}';
      const envoySeries = 'sidecar_injector_injections_total{injection="envoy",reason="injected"}';
      const fastestBucket = 'sidecar_injector_admission_duration_seconds_bucket{le="0.0001"}';
      const allBucket = 'sidecar_injector_admission_duration_seconds_bucket{le="+Inf"}';
      await post(freshReview('pod-create-sleep', 'metrics-warm-up')); // so that every series exists
      const before = await scrape();
      for (const series of [patchedSeries, envoySeries, fastestBucket, allBucket, 'sidecar_injector_admission_duration_seconds_count']) {
        assert.notEqual(sample(before, series), undefined, `expected series ${series} in /metrics, got:\n${before}`);
      }
      for (const uid of ['metrics-1', 'metrics-2']) admissionResponse(await post(freshReview('pod-create-sleep', uid)), freshReview('pod-create-sleep', uid));
      const after = await scrape();
      for (const series of [patchedSeries, envoySeries, allBucket]) {
        assert.equal(sample(after, series), sample(before, series)! + 2, `expected ${series} to grow by 2 after two patched admissions: was ${sample(before, series)}, now ${sample(after, series)}`);
      }
      assert.ok(sample(after, fastestBucket)! >= sample(before, fastestBucket)!, 'a cumulative bucket never shrinks');
    });

    test('a QoS class raised is counted in /metrics by injection and reason, and not warned (nothing to act on)', async () => {
      const series = 'sidecar_injector_pod_warnings_total{injection="envoy",reason="qos-class-changed"}';
      const scrape = async () => (await opsRequest(opsPort, '/metrics')).text;
      const before = sample(await scrape(), series) ?? 0;
      // No container has requests or limits: a BestEffort pod, which envoy's requests make Burstable.
      const raised = freshReview('pod-create-sleep', 'metrics-qos-raised');
      const raisedResponse = admissionResponse(await post(raised), raised);
      assert.deepEqual(
        (raisedResponse.warnings ?? []).filter((warning: string) => warning.includes('QoS')),
        [],
        `expected no QoS warning for BestEffort -> Burstable (nothing to act on), got ${JSON.stringify(raisedResponse.warnings)}`,
      );
      const after = sample(await scrape(), series);
      assert.equal(after, before + 1, `expected ${series} to grow by 1 after one class change: was ${before}, now ${after}`);
    });
  });

  describe('admission answers', () => {
    test('every recorded review, sent three times with new uids, gets exactly the engine\'s answer and a Content-Length that counts its bytes', async () => {
      const config = resolveInjectorConfig(CONFIG);
      for (const name of reviewNames()) {
        for (let round = 0; round < 3; round++) {
          const review = loadReview(name);
          review.request.uid = `${review.request.uid.slice(0, 24)}-round-${round}`;
          const result = await post(review);
          assert.equal(result.status, 200, `${name}: ${result.text.slice(0, 300)}`);
          assert.equal(Number(result.headers['content-length']), Buffer.byteLength(result.text), `${name}: Content-Length`);
          const expected = evaluate(decodeAdmissionReview(loadReviewWithUid(name, review.request.uid)).request, config).response;
          assert.deepEqual(result.json(), { apiVersion: review.apiVersion, kind: 'AdmissionReview', response: expected }, `${name}, round ${round}`);
        }
      }
    });

    test('answers a v1beta1 review as admission.k8s.io/v1beta1 with its uid', async () => {
      const review = loadReview('pod-create-demoapp-v1beta1');
      const result = await post(review);
      assert.equal(result.status, 200, `expected 200, got ${result.status}: ${result.text}`);
      const body = result.json();
      assert.deepEqual(
        { apiVersion: body.apiVersion, kind: body.kind, uid: body.response?.uid },
        { apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', uid: review.request.uid },
        `expected the v1beta1 envelope with the request's uid, got ${result.text.slice(0, 300)}`,
      );
    });

    test('answers a dry-run request exactly like the same request without dry-run', async () => {
      const dryRun = loadReview('pod-create-dryrun-dryrun');
      assert.equal(dryRun.request.dryRun, true, 'the fixture is a dry-run request');
      const real = loadReview('pod-create-dryrun-dryrun');
      real.request.dryRun = false;
      const dryResponse = admissionResponse(await post(dryRun), dryRun);
      const realResponse = admissionResponse(await post(real), real);
      assert.ok(dryResponse.patch, `expected the dry-run request to be patched, got ${JSON.stringify(dryResponse)}`);
      assert.deepEqual(
        { ...dryResponse, patch: decodePatch(dryResponse) },
        { ...realResponse, patch: decodePatch(realResponse) },
        'expected the dry-run answer to equal the non-dry-run answer',
      );
    });

    test('skips an injection whose template cannot render, with a warning, and still allows the object', async () => {
      const rendered = loadReview('deployment-create-frontend');
      const renderedPatched = applyResponse(rendered.request.object, admissionResponse(await post(rendered), rendered));
      assert.ok(containerNames(renderedPatched).initContainers.includes('wait-for-it'), 'control: the recorded annotation does inject wait-for-it');

      const review = loadReview('deployment-create-frontend');
      review.request.object.metadata.annotations['com.foreach/wait-for-it'] = '';
      const response = admissionResponse(await post(review), review);
      assert.equal(response.allowed, true, `expected allowed, got ${JSON.stringify(response)}`);
      const patched = applyResponse(review.request.object, response);
      assert.deepEqual(containerNames(patched).initContainers, [], `expected no wait-for-it init container; patch was ${JSON.stringify(decodePatch(response))}`);
      assert.ok(
        (response.warnings ?? []).some((warning: string) => warning.includes('wait-for-it')),
        `expected a warning that mentions wait-for-it, got ${JSON.stringify(response.warnings)}`,
      );
    });
  });

  describe('TLS', () => {
    test('refuses a client that speaks at most TLS 1.1', async () => {
      // SECLEVEL=0 lets this client really offer TLS 1.0/1.1, so the refusal is the server's.
      await assert.rejects(
        handshake(port, { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' }),
        (error: NodeJS.ErrnoException) => {
          assert.match(`${error.code} ${error.message}`, /protocol version|unsupported protocol|wrong version/i, `expected a protocol version failure, got ${error.code}: ${error.message}`);
          return true;
        },
        'expected the TLS 1.1 handshake to fail',
      );
    });

    test('accepts TLS 1.2', async () => {
      assert.equal(await handshake(port, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' }), 'TLSv1.2');
    });

    test('accepts TLS 1.3', async () => {
      assert.equal(await handshake(port, { minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' }), 'TLSv1.3');
    });
  });

  test('logs an admission with uid, kind and name but none of the object contents', async () => {
    const secret = 'hunter2-s3cr3t-db-password-value';
    const review = freshReview('pod-create-sleep', 'uid-of-the-logged-admission');
    review.request.object.spec.containers[0].env = [{ name: 'DB_PASSWORD', value: secret }];
    const images: string[] = review.request.object.spec.containers.map((c: { image: string }) => c.image);
    const from = webhook.logs.length;
    admissionResponse(await post(review), review);
    // The line is written with its batch, shortly after the answer: wait for it (bounded, for a loaded machine).
    const logged = async () => webhook.logs.slice(from).map((line) => JSON.parse(line)).find((candidate) => candidate.msg === 'admission' && candidate.uid === review.request.uid);
    const entry = await until('the admission line', 30_000, logged).catch(() => undefined);
    const lines = webhook.logs.slice(from);
    assert.ok(entry, `expected an "admission" info line for uid ${review.request.uid}, got:\n${lines.join('')}`);
    assert.deepEqual({ kind: entry.kind, name: entry.name }, { kind: 'Pod', name: 'sleep' }, `expected the line to name the Pod sleep, got ${JSON.stringify(entry)}`);
    for (const forbidden of [secret, ...images]) {
      assert.ok(!webhook.logs.join('').includes(forbidden), `expected no log line to contain "${forbidden}" from the object, got:\n${lines.join('')}`);
    }
  });

  test('serves 50 sequential requests on one keep-alive connection', async () => {
    const agent = keepAliveAgent(ca, TEST_SERVER_NAME, 1);
    const sockets = new Set<Socket>();
    agent.on('free', (socket: Socket) => sockets.add(socket));
    try {
      for (let i = 0; i < 50; i++) {
        const review = freshReview('pod-create-sleep', `keep-alive-${i}`);
        admissionResponse(await postAdmission(port, review, { ca, agent }), review);
      }
      assert.equal(sockets.size, 1, `expected all 50 requests on one connection, the agent used ${sockets.size}`);
    } finally {
      agent.destroy();
    }
  });

  test("Node's HTTP parser keeps reading the connection natively: the server adds no 'data' listener to its sockets", async () => {
    // A 'data' or 'readable' listener added to a server socket, even once and removed again, makes
    // Node stop parsing that connection natively and feed it through JavaScript stream events
    // instead, for the rest of its life (about a tenth more CPU per request). Natively parsed, the
    // socket itself emits no 'data' events at all: count them on the server's side of a keep-alive
    // connection, from its first request on.
    const dataEvents = new Map<Socket, number>();
    const onRequest = (message: unknown) => {
      const socket = (message as { socket: Socket }).socket;
      if (dataEvents.has(socket)) return;
      dataEvents.set(socket, 0);
      const emit = socket.emit;
      socket.emit = function (this: Socket, event: string | symbol, ...args: unknown[]) {
        if (event === 'data') dataEvents.set(socket, dataEvents.get(socket)! + 1);
        return Reflect.apply(emit, this, [event, ...args]) as boolean;
      } as typeof socket.emit;
    };
    diagnostics.subscribe('http.server.request.start', onRequest);
    const agent = keepAliveAgent(ca, TEST_SERVER_NAME, 1);
    try {
      for (let i = 0; i < 5; i++) {
        const review = freshReview('pod-create-sleep', `native-parser-${i}`);
        admissionResponse(await postAdmission(port, review, { ca, agent }), review);
      }
    } finally {
      diagnostics.unsubscribe('http.server.request.start', onRequest);
      agent.destroy();
    }
    assert.equal(dataEvents.size, 1, 'the five requests came on one connection');
    assert.deepEqual([...dataEvents.values()], [0], "'data' events the server's socket emitted for the four requests after the first");
  });
});

describe('the webhook server with the kill switch off (enabled: false)', () => {
  let webhook: InProcessWebhook;

  before(async () => {
    webhook = await startInProcess({ ...CONFIG, enabled: false }, certificate);
  });
  after(async () => {
    await webhook?.stop();
  });

  test('admits a recorded pod unchanged, without a patch', async () => {
    const review = loadReview('pod-create-sleep');
    const response = admissionResponse(await postAdmission(webhook.port, review, { ca }), review);
    assert.deepEqual(
      { allowed: response.allowed, patchType: response.patchType, patch: response.patch },
      { allowed: true, patchType: undefined, patch: undefined },
      `expected an allowed answer without a patch, got ${JSON.stringify(response)}`,
    );
  });
});
