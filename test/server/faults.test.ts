// The bundled webhook (what the image runs) as its own process, under keep-alive load like the
// apiserver's, while things go wrong around it: SIGTERM, a rotated certificate, a broken ConfigMap,
// and a client that stops sending halfway through a body. Every wait is for an event (answers
// counted, a log line, a socket closed) with a deadline far past it; a deadline the server keeps is
// read from its own report (its log lines' times and fields), not from this process's clock.

import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import * as https from 'node:https';
import { performance } from 'node:perf_hooks';
import * as tls from 'node:tls';
import { InjectorConfig, generateWebhookCertificate } from '../../charts/engine';
import { RUNTIME_ENV } from '../../webhook/config';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { decodePatch, loadReview } from '../support/recorded-reviews';
import { SLOW_SWEEPS, SWEEP_INTERVAL_MS } from '../../webhook/server/connection-table';
import {
  BundledWebhook,
  MountedDirs,
  TEST_SERVER_NAME,
  httpsRequest,
  keepAliveAgent,
  logEntries,
  logged,
  loggedAt,
  makeMountedDirs,
  startBundled,
  opsRequest,
  until,
  within,
} from '../support/webhook-harness';

const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
const renewed = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
const CONFIG: InjectorConfig = { injections: DEFAULT_INJECTIONS };
const REVIEW = JSON.stringify(loadReview('pod-create-sleep'));
const SHUTDOWN_TIMEOUT_SECONDS = 5;
const REQUEST_TIMEOUT_SECONDS = 2;
const CONCURRENCY = 12;
/** Long enough for any wait on a loaded machine; each ends on its event well before. */
const WAIT_MS = 30_000;
/** After SIGTERM and its drain, the process is out within this, by the server's clock (issue 30). */
const EXIT_MARGIN_MS = 2_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

interface Started {
  readonly webhook: BundledWebhook;
  readonly dirs: MountedDirs;
  stop(): Promise<void>;
}

async function startWebhook(extraEnv: Record<string, string> = {}): Promise<Started> {
  const dirs = makeMountedDirs(CONFIG, certificate);
  const webhook = await startBundled({
    [RUNTIME_ENV.tlsDir]: dirs.tlsDir,
    [RUNTIME_ENV.configDir]: dirs.configDir,
    [RUNTIME_ENV.shutdownTimeoutSeconds]: String(SHUTDOWN_TIMEOUT_SECONDS),
    [RUNTIME_ENV.requestTimeoutSeconds]: String(REQUEST_TIMEOUT_SECONDS),
    [RUNTIME_ENV.logLevel]: 'info',
    ...extraEnv,
  });
  return {
    webhook,
    dirs,
    async stop() {
      await webhook.stop('SIGKILL');
      dirs.cleanup();
    },
  };
}

/** One admission request as the load sent it and what came back. */
interface Exchange {
  readonly startedAt: number;
  /** When it ended, by the wall clock (Date.now(), the clock of the server's log lines). */
  endedAtWall?: number;
  /** When the whole request had been written to the socket. */
  writtenAt?: number;
  endedAt?: number;
  status?: number;
  error?: string;
  /** The patch adds the envoy container (the default config's `always` injection). */
  injectedEnvoy?: boolean;
  fingerprint?: string;
}

/** Loops posting a recorded review over keep-alive connections, as many at once as `concurrency`. */
class Load {
  readonly exchanges: Exchange[] = [];
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly port: number,
    private readonly agent: https.Agent,
    private readonly concurrency = CONCURRENCY,
  ) {}

  start(): this {
    for (let i = 0; i < this.concurrency; i++) this.loops.push(this.loop());
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
    this.agent.destroy();
  }

  failures(exchanges = this.exchanges): Exchange[] {
    return exchanges.filter((exchange) => exchange.error !== undefined || exchange.status !== 200);
  }

  /** Resolves once `count` requests started at or after `since` (performance.now()) were answered 200. */
  answered(count: number, since = 0): Promise<void> {
    return until(`${count} requests answered`, WAIT_MS, async () =>
      this.exchanges.filter((e) => e.startedAt >= since && e.status === 200).length >= count ? true : undefined,
    ).then(() => undefined);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const exchange = await this.once();
      if (exchange.error) await sleep(25); // refused while the process is going away: do not spin
    }
  }

  private once(): Promise<Exchange> {
    const exchange: Exchange = { startedAt: performance.now() };
    this.exchanges.push(exchange);
    return new Promise((resolve) => {
      const done = () => {
        exchange.endedAt ??= performance.now();
        exchange.endedAtWall ??= Date.now();
        resolve(exchange);
      };
      const req = https.request(
        {
          host: '127.0.0.1',
          port: this.port,
          path: '/mutate',
          method: 'POST',
          agent: this.agent,
          headers: { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(REVIEW)) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          exchange.fingerprint = (res.socket as tls.TLSSocket).getPeerCertificate?.()?.fingerprint256;
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            exchange.status = res.statusCode;
            if (res.statusCode === 200) {
              try {
                const operations = decodePatch(JSON.parse(Buffer.concat(chunks).toString('utf8')).response);
                exchange.injectedEnvoy = operations.some((operation: any) => operation.value?.name === 'envoy' || operation.value?.[0]?.name === 'envoy');
              } catch (error) {
                exchange.error = `unreadable response: ${(error as Error).message}`;
              }
            }
            done();
          });
          res.on('error', (error) => {
            exchange.error = `${(error as NodeJS.ErrnoException).code ?? ''} ${error.message}`;
            done();
          });
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error('no response within 10 s')));
      req.on('finish', () => (exchange.writtenAt = performance.now()));
      req.on('error', (error) => {
        exchange.error = (error as NodeJS.ErrnoException).code ?? error.message;
        done();
      });
      req.end(REVIEW);
    });
  }
}

function describeExchanges(exchanges: readonly Exchange[], origin: number, limit = 8): string {
  return exchanges
    .slice(0, limit)
    .map((e) => `  started ${(e.startedAt - origin).toFixed(0)} ms, written ${e.writtenAt === undefined ? '-' : (e.writtenAt - origin).toFixed(0)} ms: ${e.error ?? e.status}`)
    .join('\n');
}

const logMessages = logEntries;

/** The certificate a brand-new connection is served. */
function peerFingerprint(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca, servername: TEST_SERVER_NAME }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.end();
      resolve(fingerprint);
    });
    socket.on('error', reject);
  });
}

describe('the bundled webhook under keep-alive load', () => {
  test('SIGTERM: every request sent before it is answered with 200, and the process exits 0 within the grace period', async (t: TestContext) => {
    const { webhook, stop } = await startWebhook();
    const load = new Load(webhook.port, keepAliveAgent(certificate.caCertificate, TEST_SERVER_NAME, 16));
    try {
      const origin = performance.now();
      load.start();
      await load.answered(150);
      const signalledAt = performance.now();
      webhook.child.kill('SIGTERM');
      const code = await within(webhook.exited, WAIT_MS + SHUTDOWN_TIMEOUT_SECONDS * 1000, 'the process to exit after SIGTERM');
      await load.stop();
      // By the server's own clock: from the signal to the line it writes last.
      const exitedAfterMs = loggedAt(webhook, 'shut down') - loggedAt(webhook, 'signal received');

      const before = load.exchanges.filter((e) => e.writtenAt !== undefined && e.writtenAt < signalledAt);
      const after = load.exchanges.filter((e) => !before.includes(e));
      const refusedAfter = after.filter((e) => e.error !== undefined);
      t.diagnostic(
        `sent before SIGTERM: ${before.length} (${load.failures(before).length} failed); after: ${after.length} ` +
          `(${after.filter((e) => e.status === 200).length} answered 200, ${refusedAfter.length} refused: ` +
          `${[...new Set(refusedAfter.map((e) => e.error))].join(', ')}); exited ${code} after ${exitedAfterMs.toFixed(0)} ms`,
      );
      assert.ok(before.length > 100, `the load made only ${before.length} requests before SIGTERM`);
      assert.deepEqual(
        load.failures(before).map((e) => e.error ?? e.status),
        [],
        `requests sent before SIGTERM that did not get a 200 (times from the start of the load, SIGTERM at ${(signalledAt - origin).toFixed(0)} ms):\n` +
          describeExchanges(load.failures(before), origin),
      );
      assert.ok(before.every((e) => e.injectedEnvoy), 'every 200 carried the envoy injection');
      for (const e of after) {
        if (e.error !== undefined) assert.match(e.error, /ECONNREFUSED|ECONNRESET|EPIPE|socket hang up/, `a request after SIGTERM failed with ${e.error}`);
        else assert.equal(e.status, 200, 'a request after SIGTERM that was answered was answered with 200');
      }
      assert.equal(code, 0, `exit code; logs:\n${webhook.logs.slice(-5).join('')}`);
      assert.ok(exitedAfterMs <= EXIT_MARGIN_MS, `shut down ${exitedAfterMs} ms after SIGTERM by the server's log, with no drain: more than ${EXIT_MARGIN_MS} ms`);
      const messages = logMessages(webhook).map((entry) => entry.msg);
      assert.ok(messages.includes('signal received') && messages.includes('shut down'), `shutdown logs: ${messages.slice(-4).join(' | ')}`);
      assert.ok(!messages.includes('shutdown timeout reached; closing remaining connections'), 'the shutdown had to cut connections off');
    } finally {
      await load.stop();
      await stop();
    }
  });

  test('SIGTERM with a drain delay: unready at once, every request during the drain answered, then exit 0', async (t: TestContext) => {
    // The Deployment's drain. The load keeps sending through its first LOAD_MS, by the server's clock,
    // and then stops, as the apiserver does once the endpoint is gone: what it sent last has the rest
    // of the drain to be answered, however slow the machine (one loaded run took 500 ms a request).
    const DRAIN_SECONDS = 5;
    const LOAD_MS = 2_000;
    const { webhook, stop } = await startWebhook({ [RUNTIME_ENV.shutdownDelaySeconds]: String(DRAIN_SECONDS) });
    const load = new Load(webhook.port, keepAliveAgent(certificate.caCertificate, TEST_SERVER_NAME, 16));
    try {
      load.start();
      await load.answered(50);
      const signalledAt = performance.now();
      webhook.child.kill('SIGTERM');
      const draining = Date.parse((await logged(webhook, 'draining before shutdown', WAIT_MS)).time);
      const ready = await opsRequest(webhook.opsPort, '/readyz');
      const during = await httpsRequest(webhook.port, '/mutate', REVIEW, { ca: certificate.caCertificate });
      await load.answered(1, signalledAt);
      await sleep(Math.max(0, draining + LOAD_MS - Date.now()));
      await load.stop();
      const code = await within(webhook.exited, WAIT_MS + DRAIN_SECONDS * 1000, 'the process to exit after its drain');
      // By the server's own clock: the signal, the drain's end, its last line.
      const signalled = loggedAt(webhook, 'signal received');
      const drained = loggedAt(webhook, 'shutting down: idle connections closed, finishing in-flight requests');
      const shutDown = loggedAt(webhook, 'shut down');
      const afterSignal = load.exchanges.filter((e) => e.startedAt >= signalledAt);
      const lastEnded = Math.max(...load.exchanges.map((e) => e.endedAtWall ?? Infinity));
      t.diagnostic(
        `${load.exchanges.length} requests, ${afterSignal.length} started during the drain, the last answered ${drained - lastEnded} ms before its end; ` +
          `drained after ${drained - signalled} ms, shut down ${shutDown - drained} ms later; exited ${code}`,
      );
      assert.equal(ready.status, 503, `/readyz during the drain: ${ready.text}`);
      assert.equal(during.status, 200, 'a new connection during the drain is still served');
      assert.equal(during.headers.connection, 'close', 'and asked to reconnect elsewhere');
      assert.ok(afterSignal.some((e) => e.status === 200), 'the load had requests answered during the drain');
      assert.deepEqual(load.failures(load.exchanges).map((e) => e.error ?? e.status), [], 'no request failed, before or during the drain');
      assert.equal(code, 0);
      assert.ok(drained - signalled >= DRAIN_SECONDS * 1000, `the drain ended ${drained - signalled} ms after SIGTERM, before its ${DRAIN_SECONDS} s`);
      assert.ok(shutDown - signalled <= DRAIN_SECONDS * 1000 + EXIT_MARGIN_MS, `shut down ${shutDown - signalled} ms after SIGTERM, past its drain plus ${EXIT_MARGIN_MS} ms`);
    } finally {
      await load.stop();
      await stop();
    }
  });

  test('certificate rotation: no request fails, and new connections are served the new certificate', async (t: TestContext) => {
    const { webhook, dirs, stop } = await startWebhook();
    const bothCas = `${certificate.caCertificate}\n${renewed.caCertificate}`;
    const load = new Load(webhook.port, keepAliveAgent(bothCas, TEST_SERVER_NAME, 16));
    try {
      assert.equal(await peerFingerprint(webhook.port, bothCas), fingerprintOf(certificate.certificate), 'served the first certificate before rotation');
      load.start();
      await load.answered(50);
      const rotatedAt = performance.now();
      dirs.writeCertificate(renewed);
      await until('a new connection to be served the renewed certificate', WAIT_MS, async () =>
        (await peerFingerprint(webhook.port, bothCas)) === fingerprintOf(renewed.certificate) ? true : undefined,
      );
      const servedAfterMs = performance.now() - rotatedAt;
      // New connections during the rest of the load get the new certificate, old ones keep theirs.
      await load.answered(50, performance.now());
      await load.stop();
      const fingerprints = new Set(load.exchanges.map((e) => e.fingerprint));
      t.diagnostic(`${load.exchanges.length} requests, new certificate served ${servedAfterMs.toFixed(0)} ms after the swap; certificates seen by the load: ${fingerprints.size}`);
      assert.ok(load.exchanges.length > 100, `the load made only ${load.exchanges.length} requests`);
      assert.deepEqual(load.failures().map((e) => e.error ?? e.status), [], 'requests that failed during the rotation');
      // Only the renewed CA: a client that trusts only the new CA (the updated caBundle) is served too.
      const onlyNew = await httpsRequest(webhook.port, '/mutate', REVIEW, { ca: renewed.caCertificate });
      assert.equal(onlyNew.status, 200);
      const messages = logMessages(webhook).map((entry) => entry.msg);
      assert.ok(messages.includes('certificate reloaded'), 'logged the reload');
      assert.ok(!messages.includes('certificate reload failed; the current certificate keeps serving'), 'no failed reload was logged');
    } finally {
      await load.stop();
      await stop();
    }
  });

  test('an invalid config under load: no request fails, the last good config keeps serving, and it shows as stale', async (t: TestContext) => {
    const { webhook, dirs, stop } = await startWebhook();
    const ca = certificate.caCertificate;
    const load = new Load(webhook.port, keepAliveAgent(ca, TEST_SERVER_NAME, 16));
    try {
      load.start();
      await load.answered(50);
      dirs.writeConfig(JSON.stringify({ injections: [{ name: 'Not A Label', trigger: { type: 'always' }, containers: [{ name: 'x', image: 'x' }] }] }));
      const readiness = await until('/readyz to report the config stale', WAIT_MS, async () => {
        const response = await opsRequest(webhook.opsPort, '/readyz');
        const body = response.json();
        return body.config === 'stale' ? { status: response.status, body } : undefined;
      });
      await load.answered(50, performance.now());
      await load.stop();
      t.diagnostic(`${load.exchanges.length} requests; readyz ${JSON.stringify(readiness)}`);

      assert.equal(readiness.status, 200, 'a bad config update does not take the replica out of the Service');
      assert.equal(readiness.body.ready, true);
      assert.match(String(readiness.body.configError), /Not A Label/);
      assert.ok(load.exchanges.length > 100, `the load made only ${load.exchanges.length} requests`);
      assert.deepEqual(load.failures().map((e) => e.error ?? e.status), [], 'requests that failed while the bad config was written');
      const withoutEnvoy = load.exchanges.filter((e) => e.status === 200 && !e.injectedEnvoy);
      assert.equal(withoutEnvoy.length, 0, `${withoutEnvoy.length} responses did not inject envoy: the last good config stopped serving`);
      const metrics = await opsRequest(webhook.opsPort, '/metrics');
      assert.match(metrics.text, /^sidecar_injector_config_last_reload_successful 0$/m);
      assert.match(metrics.text, /^sidecar_injector_reloads_total\{what="config",result="failure"\} 1$/m);
      const errors = logMessages(webhook).filter((entry) => entry.msg === 'invalid config ignored; the last good config keeps serving');
      assert.equal(errors.length, 1, 'the bad config is logged once');
      assert.match(String(errors[0].error), /Not A Label/);
    } finally {
      await load.stop();
      await stop();
    }
  });

  /** What the stalled client and the operator saw, for the tests after this one. */
  let stall: { received: string; errorLogs: string[]; metrics: string } | undefined;

  // Its body stops arriving: the connection table cuts it once two sweeps in a row saw it below the
  // minimum rate, or Node once the request timeout has passed, whichever comes first.
  test('a client stalling mid-body is cut off with 408 by the server, by its own report no sooner than its rules allow, while others keep being served', async (t: TestContext) => {
    const { webhook, stop } = await startWebhook({ [RUNTIME_ENV.logLevel]: 'debug' });
    const ca = certificate.caCertificate;
    const load = new Load(webhook.port, keepAliveAgent(ca, TEST_SERVER_NAME, 16), 8);
    // Past both rules' latest cut (the request timeout, then one check a second), with a margin.
    const deadlineMs = REQUEST_TIMEOUT_SECONDS * 1000 + 2 * SWEEP_INTERVAL_MS + WAIT_MS;
    try {
      load.start();
      await load.answered(20);
      const stalled = await new Promise<{ sentAt: number; closedAt: number; received: string }>((resolve, reject) => {
        let sentAt = 0;
        let received = '';
        const socket = tls.connect({ host: '127.0.0.1', port: webhook.port, ca, servername: TEST_SERVER_NAME }, () => {
          socket.write(
            'POST /mutate HTTP/1.1\r\nHost: sidecar-injector.sidecar-injector.svc\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"kind":"A',
          );
          sentAt = performance.now();
        });
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => (received += chunk));
        socket.on('error', () => undefined); // a reset counts as closed too
        socket.on('close', () => resolve({ sentAt, closedAt: performance.now(), received }));
        setTimeout(() => {
          socket.destroy();
          reject(new Error(`the stalled connection was still open after ${deadlineMs} ms; received ${JSON.stringify(received)}`));
        }, deadlineMs).unref();
      });
      await load.stop();
      stall = {
        received: stalled.received,
        errorLogs: logMessages(webhook).filter((entry) => entry.level === 'error').map((entry) => JSON.stringify(entry)),
        metrics: (await opsRequest(webhook.opsPort, '/metrics')).text,
      };

      const openForMs = stalled.closedAt - stalled.sentAt;
      // Requests both sent and answered while the stalled one was held: the server was not held by it.
      const servedDuringStall = load.exchanges.filter((e) => e.status === 200 && e.startedAt > stalled.sentAt && e.endedAt! < stalled.closedAt);
      // The server's report of the cut: the table's, with the seconds since the request started by
      // the server's clock, or Node's request timeout (which counts from the request's start itself).
      const cut = logMessages(webhook).find(
        (entry) => entry.msg === 'slow request body cut with 408' || (entry.msg === 'malformed or timed-out HTTP request' && /timeout/i.test(String(entry.error))),
      );
      t.diagnostic(
        `stalled connection closed after ${openForMs.toFixed(0)} ms here, having received ${JSON.stringify(stalled.received.split('\r\n')[0])}; ` +
          `the server's report: ${JSON.stringify(cut)}; ${servedDuringStall.length} requests served meanwhile`,
      );
      assert.ok(cut, `the server logged no cut of the stalled request; its last lines:\n${webhook.logs.slice(-5).join('')}`);
      if (cut.msg === 'slow request body cut with 408') {
        // Two sweeps in a row below the rate: the first may come at once, the second a sweep later.
        const earliest = ((SLOW_SWEEPS - 1) * SWEEP_INTERVAL_MS) / 1000;
        assert.ok(Number(cut.seconds) >= earliest, `cut ${cut.seconds} s after the request started, by the server's clock: before ${SLOW_SWEEPS} sweeps could see it slow (${earliest} s)`);
      }
      assert.ok(stalled.received === '' || /^HTTP\/1\.1 4\d\d /.test(stalled.received), `the stalled client was sent ${JSON.stringify(stalled.received)}`);
      assert.ok(servedDuringStall.length > 0, 'no request sent during the stall was answered before it was cut');
      assert.deepEqual(load.failures().map((e) => e.error ?? e.status), [], 'requests of other clients that failed');
      assert.equal(webhook.child.exitCode, null, 'the process is still running');
    } finally {
      await load.stop();
      await stop();
    }
  });

  test('tells the stalled client 408 Request Timeout', () => {
    assert.ok(stall, 'the stalling test ran');
    assert.match(stall.received.split('\r\n')[0], /^HTTP\/1\.1 408 /, 'the status line sent to the stalled client');
  });

  test('a connection that sends nothing for longer than the header timeout is left open and serves the request it carries later, as a pooled connection of the apiserver does', async () => {
    const { webhook, stop } = await startWebhook();
    const ca = certificate.caCertificate;
    const review = loadReview('pod-create-sleep');
    const payload = JSON.stringify(review);
    const idleMs = (REQUEST_TIMEOUT_SECONDS + 2) * 1000;
    try {
      const seen = await new Promise<{ beforeRequest: string; received: string }>((resolve, reject) => {
        let received = '';
        let beforeRequest: string | undefined;
        const socket = tls.connect({ host: '127.0.0.1', port: webhook.port, ca, servername: TEST_SERVER_NAME }, () => {
          setTimeout(() => {
            beforeRequest = received;
            socket.write(
              `POST /mutate?timeout=10s HTTP/1.1\r\nHost: sidecar-injector.sidecar-injector.svc\r\nContent-Type: application/json\r\n` +
                `Content-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`,
            );
          }, idleMs);
        });
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => (received += chunk));
        socket.on('error', () => undefined);
        socket.on('close', () => resolve({ beforeRequest: beforeRequest ?? `(closed after ${received.length} bytes, before the request was sent)`, received }));
        setTimeout(() => {
          socket.destroy();
          reject(new Error(`no answer within ${idleMs + 8000} ms; received ${JSON.stringify(received.slice(0, 200))}`));
        }, idleMs + 8000).unref();
      });
      assert.equal(seen.beforeRequest, '', 'what the idle connection was sent before it carried a request (Node writes an unsolicited 408 there)');
      assert.match(seen.received.split('\r\n')[0], /^HTTP\/1\.1 200 /, `the answer: ${seen.received.slice(0, 200)}`);
      assert.ok(seen.received.includes(review.request.uid), 'the answer echoes the request uid');
    } finally {
      await stop();
    }
  });

  // The silent connections come from another pod (127.0.0.2) than the new ones (127.0.0.1, the
  // apiserver's stand-in): at the cap, the source holding the most makes room.
  test('at the connection cap a new connection gets in, and the connections silent the longest, of the source holding the most, are closed to make room', async () => {
    const { webhook, stop } = await startWebhook({ [RUNTIME_ENV.maxConnections]: '10' });
    const ca = certificate.caCertificate;
    const open = (localAddress = '127.0.0.1'): Promise<tls.TLSSocket & { closedAt?: number }> =>
      new Promise((resolve, reject) => {
        const from: object = { localAddress }; // tls.connect passes it to net.connect; its types do not say so
        const socket: tls.TLSSocket & { closedAt?: number } = tls.connect({ host: '127.0.0.1', port: webhook.port, ca, servername: TEST_SERVER_NAME, ...from }, () => resolve(socket));
        socket.on('error', () => undefined);
        socket.on('close', () => (socket.closedAt ??= performance.now()));
        setTimeout(() => reject(new Error('connect timed out')), 5000).unref();
      });
    const sockets: (tls.TLSSocket & { closedAt?: number })[] = [];
    /** The server's own count of open connections and of those it closed to make room. */
    const table = async () => {
      const metrics = (await opsRequest(webhook.opsPort, '/metrics')).text;
      const series = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1]);
      return { open: series('sidecar_injector_connections_open'), evicted: series('sidecar_injector_connections_closed_total\\{reason="evicted"\\}') };
    };
    try {
      for (let i = 0; i < 10; i++) sockets.push(await open('127.0.0.2'));
      await until('the server to hold the ten connections', WAIT_MS, async () => ((await table()).open === 10 ? true : undefined));
      assert.equal(sockets.filter((socket) => socket.closedAt !== undefined).length, 0, 'silent connections stay open while there is room');
      const fresh = [await open(), await open(), await open()];
      // The server decides at accept: three closed, as many open as before. Then which three.
      const counted = await until('the server to have made room three times', WAIT_MS, async () => {
        const now = await table();
        return now.evicted >= 3 ? now : undefined;
      });
      assert.deepEqual(counted, { open: 10, evicted: 3 }, "the server's count of open connections and of those closed to make room");
      await until('the closed connections to see their close', WAIT_MS, async () => (sockets.filter((socket) => socket.closedAt !== undefined).length >= 3 ? true : undefined));
      const closed = sockets.map((socket, i) => (socket.closedAt !== undefined ? i : -1)).filter((i) => i >= 0);
      assert.deepEqual(closed, [0, 1, 2], 'the three oldest silent connections (by index) closed to make room for three new ones');
      assert.equal(fresh.filter((socket) => socket.closedAt !== undefined).length, 0, 'the new connections stay open');
      const answer = await httpsRequest(webhook.port, '/mutate', REVIEW, { ca });
      assert.equal(answer.status, 200, 'a new connection at the cap is still answered');
      for (const socket of fresh) socket.destroy();
    } finally {
      for (const socket of sockets) socket.destroy();
      await stop();
    }
  });

  test('counts the stalled client as a client that gave up, not as an internal error', () => {
    assert.ok(stall, 'the stalling test ran');
    assert.deepEqual(stall.errorLogs, [], 'error-level log lines (what pages an operator)');
    const errors = stall.metrics.split('\n').filter((line) => line.startsWith('sidecar_injector_admission_requests_total{outcome="error"}'));
    assert.deepEqual(errors, [], 'requests counted as internal errors');
  });
});
