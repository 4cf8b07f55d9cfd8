// After SIGTERM and its drain, the bundled webhook closes every connection with no request in flight
// at once, answers the requests in flight with `Connection: close`, and exits when the last answer is
// written: never waiting out its shutdown timeout for a client's pooled connections. Node's own
// closeIdleConnections() leaves a connection that has never sent a byte open, and the apiserver's Go
// client keeps such connections in its pool (it dials one for a request that another connection then
// serves), so the webhook used to wait the whole INJECTOR_SHUTDOWN_TIMEOUT_SECONDS (20 s) after every
// drain. One test holds each kind of connection open from Node; the other is Go's own Transport
// (test/support/go-pool-client), built when Go is installed. Times are the server's own: the
// timestamps of its log lines.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { InjectorConfig, generateWebhookCertificate } from '../../charts/engine';
import { RUNTIME_ENV } from '../../webhook/config';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { loadReview } from '../support/recorded-reviews';
import { MountedDirs, REPO_ROOT, TEST_SERVER_NAME, logEntries, logged, loggedAt, makeMountedDirs, opsRequest, startBundled, until, within } from '../support/webhook-harness';

const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
const CONFIG: InjectorConfig = { injections: DEFAULT_INJECTIONS };
const REVIEW = JSON.stringify(loadReview('pod-create-sleep'));
/** Long enough for any wait on a loaded machine; each ends on its event well before. */
const WAIT_MS = 30_000;
/** The bound: out within its drain plus this, by the server's own clock. */
const EXIT_MARGIN_MS = 2_000;
const CLOSING_MESSAGE = 'shutting down: idle connections closed, finishing in-flight requests';

/** Resolves once `socket` has closed. */
const closed = (socket: net.Socket): Promise<void> => (socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve())));


function tlsConnect(port: number): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca: certificate.caCertificate, servername: TEST_SERVER_NAME }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything a socket receives until it closes. */
function received(socket: net.Socket): Promise<string> {
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  socket.on('error', () => undefined); // a reset is a close too
  return closed(socket).then(() => text);
}

describe('the bundled webhook after SIGTERM and its drain', () => {
  let dirs: MountedDirs;
  before(() => {
    dirs = makeMountedDirs(CONFIG, certificate);
  });
  after(() => dirs?.cleanup());

  test('closes every connection with no request in flight at once, answers the one in flight with Connection: close, and exits once it is written', async (t) => {
    const DRAIN_SECONDS = 1;
    const webhook = await startBundled({
      [RUNTIME_ENV.tlsDir]: dirs.tlsDir,
      [RUNTIME_ENV.configDir]: dirs.configDir,
      [RUNTIME_ENV.logLevel]: 'info',
      [RUNTIME_ENV.shutdownDelaySeconds]: String(DRAIN_SECONDS),
      // Far past every wait here: reaching it would show as its log line.
      [RUNTIME_ENV.shutdownTimeoutSeconds]: '60',
    });
    const sockets: net.Socket[] = [];
    let trickle: NodeJS.Timeout | undefined;
    try {
      // A keep-alive connection that has carried a request and has its answer.
      const keptAlive = await tlsConnect(webhook.port);
      const firstAnswer = new Promise<string>((resolve) => {
        let text = '';
        keptAlive.setEncoding('latin1');
        keptAlive.on('data', (chunk: string) => {
          text += chunk;
          if (/\r\n\r\n[\s\S]*"uid"/.test(text) && text.trimEnd().endsWith('}')) resolve(text);
        });
      });
      keptAlive.write(`POST /mutate HTTP/1.1\r\nHost: ${TEST_SERVER_NAME}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(REVIEW)}\r\n\r\n${REVIEW}`);
      assert.match(await within(firstAnswer, WAIT_MS, 'the first answer'), /^HTTP\/1\.1 200 /);
      // One handshaken that has never sent a byte (a Go pool's spare), one that never sent its
      // ClientHello, one that has sent part of a request line.
      const neverAByte = await tlsConnect(webhook.port);
      const noClientHello = await new Promise<net.Socket>((resolve) => {
        const socket = net.connect({ host: '127.0.0.1', port: webhook.port }, () => resolve(socket));
      });
      const partial = await tlsConnect(webhook.port);
      partial.write('POST /mutate HTTP/1.1\r\nHost');
      const idle = { keptAlive, neverAByte, noClientHello, partial };
      sockets.push(...Object.values(idle));
      const idleClosed = Object.values(idle).map((socket) => {
        socket.on('error', () => undefined);
        return closed(socket);
      });

      // A request in flight: its headers and its body's start are in, the rest comes as the test
      // says, meanwhile fast enough (160 KiB/s) that the minimum body rate (8 KiB/s) never cuts it.
      const padded = loadReview('pod-create-sleep');
      padded.request.object.metadata.annotations = { ...padded.request.object.metadata.annotations, padding: 'x'.repeat(2 * 1024 * 1024) };
      const body = Buffer.from(JSON.stringify(padded));
      const inFlight = await tlsConnect(webhook.port);
      sockets.push(inFlight);
      const inFlightText = received(inFlight);
      inFlight.write(`POST /mutate HTTP/1.1\r\nHost: ${TEST_SERVER_NAME}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      let sent = 0;
      const sendSome = (bytes: number) => {
        const next = Math.min(body.length, sent + bytes);
        inFlight.write(body.subarray(sent, next));
        sent = next;
      };
      sendSome(32 * 1024);
      trickle = setInterval(() => sendSome(Math.min(32 * 1024, body.length - 1 - sent)), 200);
      await until('the request in flight to hold its body in the memory budget', WAIT_MS, async () => {
        const metrics = (await opsRequest(webhook.opsPort, '/metrics')).text;
        return /^sidecar_injector_memory_budget_held_bytes [1-9]/m.test(metrics) ? true : undefined;
      });

      webhook.child.kill('SIGTERM');
      const closing = await logged(webhook, CLOSING_MESSAGE, WAIT_MS);
      assert.deepEqual({ closed: closing.closed, inFlight: closing.inFlight }, { closed: 4, inFlight: 1 }, `the server's report of what it closed at once: ${JSON.stringify(closing)}`);
      await within(Promise.all(idleClosed), WAIT_MS, 'the idle connections to be closed');
      assert.equal(inFlight.closed, false, 'the connection in flight is left open');
      assert.equal(sent < body.length, true, 'the body was still arriving');

      clearInterval(trickle);
      sendSome(body.length);
      const answer = await within(inFlightText, WAIT_MS, 'the answer in flight');
      const code = await within(webhook.exited, WAIT_MS, 'the process to exit');
      const entries = logEntries(webhook);
      const at = (msg: string) => loggedAt(webhook, msg);
      t.diagnostic(`closed at once ${at(CLOSING_MESSAGE) - at('signal received')} ms after the signal (drain ${DRAIN_SECONDS} s); shut down ${at('shut down') - at(CLOSING_MESSAGE)} ms after that`);
      assert.match(answer, /^HTTP\/1\.1 200 /, `the answer in flight: ${answer.slice(0, 200)}`);
      assert.match(answer, /\r\nConnection: close\r\n/i, 'it says the connection closes');
      assert.ok(answer.includes(padded.request.uid), 'the whole answer arrived, with its uid');
      assert.equal(code, 0, `exit code; logs:\n${webhook.logs.slice(-5).join('')}`);
      assert.ok(!entries.some((entry) => entry.msg === 'shutdown timeout reached; closing remaining connections'), 'the shutdown timeout was not what ended it');
    } finally {
      if (trickle) clearInterval(trickle);
      for (const socket of sockets) socket.destroy();
      await webhook.stop('SIGKILL');
    }
  });

  const go = findGo();
  test(
    "exits within its drain plus 2 s with Go's Transport holding pooled connections, some never used, and no request cut",
    { skip: go === undefined ? 'Go is not installed: set GO to the go binary or put go on PATH' : false },
    async (t) => {
      const DRAIN_SECONDS = 4;
      /** By the server's clock: how long into the drain the client keeps sending (the rest of the drain
       * is margin for what it sent last, on a machine where a request can take 500 ms). */
      const SENDING_MS = 1_500;
      const binary = buildGoClient(go!);
      const webhook = await startBundled({
        [RUNTIME_ENV.tlsDir]: dirs.tlsDir,
        [RUNTIME_ENV.configDir]: dirs.configDir,
        [RUNTIME_ENV.logLevel]: 'info',
        [RUNTIME_ENV.shutdownDelaySeconds]: String(DRAIN_SECONDS),
        // The Deployment's: what an apiserver's pooled connections used to make it wait out.
        [RUNTIME_ENV.shutdownTimeoutSeconds]: '20',
      });
      const client = new GoPoolClient(binary, webhook.port);
      try {
        // Requests from 16 goroutines at once, then from 24: a request that finds no idle connection
        // dials one, is served on one that comes back to the pool first, and the Transport keeps the
        // dialed one idle (up to 25): connections that never carried a request, as the apiserver's pool.
        // The second burst holds its dials until it is over, so that is so however slow the machine.
        for (const burst of ['burst 200 16', 'burst-held 24 24']) {
          const result = await client.command(burst, 'burst');
          assert.deepEqual(result.failed, [], `requests of "${burst}" that failed`);
        }
        const pool = await until("Go's pool to hold a connection it dialed and never used", WAIT_MS, async () => {
          const state = await client.command('state', 'state');
          return state.neverUsed >= 1 ? state : undefined;
        });
        t.diagnostic(`Go's pool before SIGTERM: ${pool.open} connections open, ${pool.neverUsed} of them never carried a request`);
        assert.ok(pool.open > pool.neverUsed, `Go's pool also holds connections that have carried requests: ${JSON.stringify(pool)}`);

        webhook.child.kill('SIGTERM');
        const draining = Date.parse((await logged(webhook, 'draining before shutdown', WAIT_MS)).time);
        // During the drain the apiserver still sends a few, until its endpoint is gone. Each is answered
        // with Connection: close, and Go closes the pooled connection it took: a few leave the pool
        // holding connections at the drain's end, as the apiserver's does.
        let sent = 0;
        do {
          const during = await client.command('one', 'one');
          sent++;
          assert.deepEqual({ status: during.status, connection: during.connection, error: during.error }, { status: 200, connection: 'close', error: '' }, `request ${sent} during the drain`);
        } while (sent < 3 && Date.now() < draining + SENDING_MS);
        const code = await within(webhook.exited, (DRAIN_SECONDS + 40) * 1000, 'the process to exit');
        const entries = logEntries(webhook);
        const exitedAfterMs = loggedAt(webhook, 'shut down') - loggedAt(webhook, 'signal received');
        const closing = entries.find((entry) => entry.msg === CLOSING_MESSAGE);
        t.diagnostic(`${sent} requests during the drain; shut down ${exitedAfterMs} ms after the signal by the server's clock (drain ${DRAIN_SECONDS} s); at the drain's end: ${JSON.stringify(closing)}`);
        assert.equal(code, 0, `exit code; logs:\n${webhook.logs.slice(-5).join('')}`);
        assert.ok(!entries.some((entry) => entry.msg === 'shutdown timeout reached; closing remaining connections'), 'the shutdown timeout was reached');
        assert.ok(
          exitedAfterMs <= DRAIN_SECONDS * 1000 + EXIT_MARGIN_MS,
          `shut down ${exitedAfterMs} ms after SIGTERM by the server's log, past its ${DRAIN_SECONDS} s drain plus ${EXIT_MARGIN_MS} ms`,
        );
        assert.ok(Number(closing?.closed) >= 1 && closing?.inFlight === 0, `the pooled connections were closed at the drain's end, none was in flight: ${JSON.stringify(closing)}`);
      } finally {
        client.stop();
        await webhook.stop('SIGKILL');
      }
    },
  );
});

/** `GO`, or `go` on PATH; undefined when neither runs. */
function findGo(): string | undefined {
  for (const candidate of [process.env.GO, 'go']) {
    if (!candidate) continue;
    try {
      execFileSync(candidate, ['version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

function buildGoClient(go: string): string {
  const output = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'go-pool-client-')), 'go-pool-client');
  execFileSync(go, ['build', '-o', output, path.join(REPO_ROOT, 'test/support/go-pool-client/main.go')], {
    cwd: REPO_ROOT,
    env: { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-mod=mod' },
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 600_000,
  });
  return output;
}

/** test/support/go-pool-client as a child: a command a line in, a JSON event a line out. */
class GoPoolClient {
  private readonly child: ChildProcess;
  private readonly events: Record<string, any>[] = [];
  private readonly waiting: { event: string; resolve: (line: Record<string, any>) => void }[] = [];
  private stderr = '';
  private readonly dir: string;

  constructor(binary: string, port: number) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'go-pool-'));
    fs.writeFileSync(path.join(this.dir, 'ca.crt'), certificate.caCertificate);
    fs.writeFileSync(path.join(this.dir, 'review.json'), REVIEW);
    this.child = spawn(binary, [], {
      env: {
        POOL_PORT: String(port),
        POOL_CA_FILE: path.join(this.dir, 'ca.crt'),
        POOL_SERVER_NAME: TEST_SERVER_NAME,
        POOL_BODY_FILE: path.join(this.dir, 'review.json'),
        // Far above a request on a pooled connection: the second burst's extra dials always lose.
        POOL_DIAL_DELAY_MS: '300',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let buffered = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        const line = JSON.parse(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
        this.events.push(line);
        const at = this.waiting.findIndex((waiter) => waiter.event === line.event);
        if (at >= 0) this.waiting.splice(at, 1)[0].resolve(line);
      }
    });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
  }

  /** Sends `command` and resolves with the next `event` line. */
  command(command: string, event: string): Promise<Record<string, any>> {
    const line = new Promise<Record<string, any>>((resolve) => this.waiting.push({ event, resolve }));
    this.child.stdin!.write(command + '\n');
    return within(line, WAIT_MS, `the Go client's answer to "${command}" (stderr: ${this.stderr.slice(0, 500)})`);
  }

  stop(): void {
    this.child.kill('SIGKILL');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
