// A load generator for the webhook, run as its own process (pinned to its own core by the caller):
//   node --import tsx test/bench/load-generator.ts '<GeneratorConfig as JSON>'
// prints one line of JSON (GeneratorResult) on stdout.
//
// It speaks HTTP/1.1 over keep-alive TLS connections the way the kube-apiserver does (POST
// /mutate?timeout=10s, one request at a time per connection, no pipelining), with a minimal client
// written on `node:tls` so the generator costs far less CPU per request than the servers it loads.
//
// open:   requests are scheduled in advance at a fixed rate (open loop); latency is counted from each
//         request's SCHEDULED send time, so time spent waiting for a connection or for the generator's
//         event loop is not hidden. The pool grows up to `connections` keep-alive connections.
// closed: `connections` connections each send the next request as soon as the previous one is answered.
//
// Every request carries a fresh uid, and the answer must echo it (and carry a patch when expected).
// Every phase is bounded in count and time; the process exits by itself.
import * as fs from 'node:fs';
import * as tls from 'node:tls';
import { Distribution, distribution } from './stats';

export interface GeneratorConfig {
  readonly port: number;
  /** PEM file of the CA the server's certificate chains to. */
  readonly caFile: string;
  readonly servername: string;
  /** A compact AdmissionReview JSON file; its request.uid is replaced per request. */
  readonly bodyFile: string;
  /** Whether every answer must carry a JSONPatch. */
  readonly expectPatch: boolean;
  /** Every request a different pod (its object's name gets the uid's last 12 digits), so no review
   * repeats another but for its uid, as a ReplicaSet's pods do: the webhook's answers for repeats
   * (webhook/server/repeated-reviews.ts) are never used. @default false */
  readonly uniquePods?: boolean;
  readonly mode: 'open' | 'closed';
  /** Requests per second (open loop). */
  readonly rate?: number;
  /** Open loop: the most connections the pool may grow to. Closed loop: the number of connections. */
  readonly connections: number;
  /** Open loop: connections opened before the schedule starts (a warm pool, like a running apiserver's). @default 4 */
  readonly initialConnections?: number;
  readonly warmupSeconds: number;
  readonly durationSeconds: number;
  /** Per request, like the apiserver's webhook timeout. @default 10000 */
  readonly timeoutMs?: number;
  /**
   * When set, the measured samples are also written here as a Float64Array of triples
   * [ms since the measured phase began (scheduled), latency µs, service µs], so runs can be merged.
   */
  readonly samplesFile?: string;
}

export interface GeneratorErrors {
  status: number;
  badResponse: number;
  socket: number;
  timeout: number;
  connect: number;
  notSent: number;
}

export interface GeneratorResult {
  readonly mode: 'open' | 'closed';
  readonly rate?: number;
  readonly durationSeconds: number;
  /** Requests in the measured phase. */
  readonly measured: number;
  readonly ok: number;
  readonly errors: GeneratorErrors;
  readonly errorCount: number;
  /** The first few measured answers that were not a 200 with the request's uid (status, head and
   * the start of the body), so an error can be traced to its cause. */
  readonly badAnswers: readonly string[];
  /** Open loop: scheduled send -> full response. Closed loop: send -> full response. Microseconds. */
  readonly latencyUs: Distribution;
  /** Actual send -> full response, microseconds. */
  readonly serviceUs: Distribution;
  /** Open loop: scheduled -> actual send (waiting for a connection or for the event loop), microseconds. */
  readonly sendDelayUs: Distribution;
  /** Successful responses per second over the measured phase. */
  readonly throughput: number;
  readonly connectionsOpened: number;
  readonly peakConnections: number;
  /** CPU the generator used during the measured phase, in percent of one core. */
  readonly generatorCpuPercent: number;
  readonly responseBytes: number;
  /** Answers received in the whole run, warm-up included (for the server's CPU time per request). */
  readonly answeredTotal: number;
  /** CPU time of this generator process from its start to the end of the run, ms. */
  readonly cpuTotalMs: number;
}

export interface InFlight {
  readonly seq: number;
  readonly scheduled: number;
  sent: number;
  readonly uid: Buffer;
  readonly deadline: number;
  readonly record: boolean;
  timedOut?: boolean;
}

const HEADER_END = Buffer.from('\r\n\r\n');
export const PATCH_MARK = Buffer.from('"patch":"');

/** One keep-alive TLS connection that sends one request at a time and reads Content-Length framed answers. */
export class Connection {
  private readonly socket: tls.TLSSocket;
  private buffer: Buffer | undefined;
  private headerEnd = -1;
  private status = 0;
  private head = '';
  private contentLength = -1;
  private closeAfter = false;
  current: InFlight | undefined;
  ready = false;
  dead = false;

  constructor(
    config: Pick<GeneratorConfig, 'port' | 'servername'>,
    ca: string,
    private readonly onReady: (connection: Connection) => void,
    private readonly onResponse: (connection: Connection, request: InFlight, status: number, body: Buffer, head: string) => void,
    private readonly onDead: (connection: Connection, request: InFlight | undefined, reason: 'connect' | 'socket') => void,
  ) {
    this.socket = tls.connect({ host: '127.0.0.1', port: config.port, ca, servername: config.servername, minVersion: 'TLSv1.2' });
    this.socket.setNoDelay(true);
    this.socket.once('secureConnect', () => {
      this.ready = true;
      this.onReady(this);
    });
    this.socket.on('data', (chunk: Buffer) => this.receive(chunk));
    this.socket.on('error', () => this.die());
    this.socket.on('close', () => this.die());
  }

  send(request: InFlight, bytes: Buffer): void {
    this.current = request;
    request.sent = performance.now();
    this.socket.write(bytes);
  }

  destroy(): void {
    this.socket.destroy();
  }

  private die(): void {
    if (this.dead) return;
    this.dead = true;
    const request = this.current;
    this.current = undefined;
    this.socket.destroy();
    this.onDead(this, request, this.ready ? 'socket' : 'connect');
  }

  private receive(chunk: Buffer): void {
    this.buffer = this.buffer ? Buffer.concat([this.buffer, chunk]) : chunk;
    for (;;) {
      const buffer: Buffer | undefined = this.buffer;
      if (!buffer) return;
      if (this.headerEnd < 0) {
        const end = buffer.indexOf(HEADER_END);
        if (end < 0) return;
        this.headerEnd = end;
        const head = buffer.toString('latin1', 0, end);
        this.status = Number(head.slice(9, 12));
        this.head = head;
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        this.contentLength = length ? Number(length[1]) : -1;
        this.closeAfter = /\r\nconnection:\s*close/i.test(head);
        if (this.contentLength < 0) {
          this.die(); // this client reads Content-Length framed answers only (both servers send them)
          return;
        }
      }
      const total = this.headerEnd + 4 + this.contentLength;
      if (buffer.length < total) return;
      const body = buffer.subarray(this.headerEnd + 4, total);
      this.buffer = buffer.length > total ? buffer.subarray(total) : undefined;
      this.headerEnd = -1;
      const request = this.current;
      this.current = undefined;
      if (request) this.onResponse(this, request, this.status, body, this.head);
      if (this.closeAfter) {
        this.die();
        return;
      }
    }
  }
}

/**
 * The object's first metadata member as compact JSON writes it up to the value's closing quote:
 * `"metadata":{"name":"sleep"` for a named pod, `"metadata":{"generateName":"sleep-"` for a
 * controller's pod (not named until after admission). `uniquePods` adds a suffix of its own to that
 * value: a different bare pod per request, or a different ReplicaSet's pod.
 */
function firstNameMember(review: { request: { object?: { metadata?: Record<string, unknown> } } }): string | undefined {
  const metadata = review.request.object?.metadata ?? {};
  const [member] = Object.keys(metadata);
  if ((member !== 'name' && member !== 'generateName') || typeof metadata[member] !== 'string') return undefined;
  return `"metadata":{${JSON.stringify(member)}:${JSON.stringify(metadata[member])}`;
}

/** A review's compact JSON cut where each request's own text goes: the uid between `prefix` and
 * `suffix`, and with `uniquePods`, the uid's last 12 characters between `suffix` (which then ends the
 * object's name or generateName with a dash) and `afterName`. */
export interface ReviewTemplate {
  readonly prefix: string;
  readonly suffix: string;
  readonly afterName: string | undefined;
}

export function reviewTemplate(template: string, uniquePods = false): ReviewTemplate {
  const parsed = JSON.parse(template);
  const originalUid: string = parsed.request.uid;
  const uidAt = template.indexOf(`"uid":"${originalUid}"`);
  if (uidAt < 0) throw new Error('the body must be compact JSON with request.uid');
  const prefix = template.slice(0, uidAt + 7);
  const suffix = template.slice(uidAt + 7 + originalUid.length);
  if (!uniquePods) return { prefix, suffix, afterName: undefined };
  const nameMember = firstNameMember(parsed);
  const at = nameMember === undefined ? -1 : suffix.indexOf(nameMember);
  if (nameMember === undefined || at < 0) throw new Error('uniquePods needs a body whose object has metadata.name or metadata.generateName first');
  return { prefix, suffix: suffix.slice(0, at + nameMember.length - 1) + '-', afterName: suffix.slice(at + nameMember.length - 1) };
}

/** The body `template` makes for `uid` (36 characters, as Kubernetes makes them). */
export function reviewBody(template: ReviewTemplate, uid: string): string {
  const { prefix, suffix, afterName } = template;
  return afterName === undefined ? prefix + uid + suffix : prefix + uid + suffix + uid.slice(24) + afterName;
}

/** The request bytes the apiserver would send for the review in `bodyFile`, with a fresh uid per request
 * (and with `uniquePods`, a pod name or generateName of its own). */
export function requestBuilder(bodyFile: string, servername: string, uniquePods = false): { uidOf(seq: number): Buffer; requestBytes(uid: Buffer): Buffer } {
  const { prefix, suffix, afterName } = reviewTemplate(fs.readFileSync(bodyFile, 'utf8'), uniquePods);
  const bodyLength = Buffer.byteLength(prefix) + Buffer.byteLength(suffix) + 36 + (afterName === undefined ? 0 : 12 + Buffer.byteLength(afterName));
  const head = Buffer.from(
    'POST /mutate?timeout=10s HTTP/1.1\r\n' +
      `Host: ${servername}:443\r\n` +
      'User-Agent: kube-apiserver-admission\r\n' +
      'Accept: application/json, */*\r\n' +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${bodyLength}\r\n` +
      'Accept-Encoding: gzip\r\n\r\n',
    'latin1',
  );
  const prefixBytes = Buffer.from(prefix);
  const suffixBytes = Buffer.from(suffix);
  const uidOf = (seq: number) => Buffer.from(`b3c40000-0000-4000-8000-${seq.toString(16).padStart(12, '0')}`, 'latin1');
  const afterNameBytes = afterName === undefined ? undefined : Buffer.from(afterName);
  const requestBytes = (uid: Buffer) =>
    afterNameBytes === undefined ? Buffer.concat([head, prefixBytes, uid, suffixBytes]) : Buffer.concat([head, prefixBytes, uid, suffixBytes, uid.subarray(24), afterNameBytes]);
  return { uidOf, requestBytes };
}

export async function runGenerator(config: GeneratorConfig): Promise<GeneratorResult> {
  const ca = fs.readFileSync(config.caFile, 'utf8');
  const { uidOf, requestBytes } = requestBuilder(config.bodyFile, config.servername, config.uniquePods);

  const timeoutMs = config.timeoutMs ?? 10_000;
  const open = config.mode === 'open';
  const rate = config.rate ?? 0;
  if (open && !(rate > 0)) throw new Error('open loop needs a rate');
  const warmupMs = config.warmupSeconds * 1000;
  const durationMs = config.durationSeconds * 1000;
  // Bounded sample storage: at most 2 million measured requests.
  const capacity = open ? Math.ceil(rate * config.durationSeconds) + 1 : 2_000_000;
  const latency = new Float64Array(capacity);
  const service = new Float64Array(capacity);
  const sendDelay = new Float64Array(capacity);
  const scheduledAt = config.samplesFile ? new Float64Array(capacity) : undefined;
  let recorded = 0;
  let ok = 0;
  let measured = 0;
  let responseBytes = 0;
  let answeredTotal = 0;
  const errors: GeneratorErrors = { status: 0, badResponse: 0, socket: 0, timeout: 0, connect: 0, notSent: 0 };
  let firstMeasuredSend = Infinity;
  let lastMeasuredDone = 0;

  const connections = new Set<Connection>();
  const idle: Connection[] = [];
  let opening = 0;
  let opened = 0;
  let peak = 0;
  const queue: InFlight[] = [];
  let queueHead = 0;
  const inFlight = new Set<InFlight>();
  let outstanding = 0; // queued + in flight
  let stopped = false;

  const fail = (request: InFlight, kind: keyof GeneratorErrors) => {
    outstanding--;
    inFlight.delete(request);
    if (request.record) errors[request.timedOut ? 'timeout' : kind]++;
  };

  const badAnswers: string[] = [];
  const keepBadAnswer = (status: number, head: string, body: Buffer, serviceMs: number) => {
    if (badAnswers.length >= 5) return;
    badAnswers.push(`status ${status} after ${serviceMs.toFixed(1)} ms; head ${JSON.stringify(head.slice(0, 400))}; body ${JSON.stringify(body.toString('utf8', 0, Math.min(body.length, 300)))}`);
  };
  const finish = (request: InFlight, status: number, body: Buffer, head: string) => {
    outstanding--;
    inFlight.delete(request);
    answeredTotal++;
    if (!request.record) return;
    const done = performance.now();
    if (status !== 200) {
      errors.status++;
      keepBadAnswer(status, head, body, done - request.sent);
      return;
    }
    if (body.indexOf(request.uid) < 0 || (config.expectPatch && body.indexOf(PATCH_MARK) < 0)) {
      errors.badResponse++;
      keepBadAnswer(status, head, body, done - request.sent);
      return;
    }
    ok++;
    responseBytes = body.length;
    if (recorded < capacity) {
      latency[recorded] = (done - request.scheduled) * 1000;
      service[recorded] = (done - request.sent) * 1000;
      sendDelay[recorded] = (request.sent - request.scheduled) * 1000;
      if (scheduledAt) scheduledAt[recorded] = request.scheduled;
      recorded++;
    }
    if (done > lastMeasuredDone) lastMeasuredDone = done;
  };

  let afterResponse: (connection: Connection) => void = () => undefined;
  let connectionLost: () => void = () => {
    if (!stopped) pump();
  };

  const openConnection = () => {
    opening++;
    opened++;
    const connection = new Connection(
      config,
      ca,
      (c) => {
        opening--;
        afterResponse(c);
      },
      (c, request, status, body, head) => {
        finish(request, status, body, head);
        if (!c.dead) afterResponse(c);
      },
      (c, request, reason) => {
        if (!c.ready) opening--;
        connections.delete(c);
        const at = idle.indexOf(c);
        if (at >= 0) idle.splice(at, 1);
        if (request) fail(request, reason);
        connectionLost();
      },
    );
    connections.add(connection);
    peak = Math.max(peak, connections.size);
  };

  const sendOn = (connection: Connection, request: InFlight) => {
    inFlight.add(request);
    if (request.record && request.scheduled < firstMeasuredSend) firstMeasuredSend = request.scheduled;
    connection.send(request, requestBytes(request.uid));
  };

  // Open loop: hand queued requests to idle connections; grow the pool when none is idle.
  function pump(): void {
    while (queueHead < queue.length) {
      const connection = idle.pop();
      if (!connection) break;
      sendOn(connection, queue[queueHead]);
      (queue as (InFlight | undefined)[])[queueHead++] = undefined;
    }
    if (queueHead > 1024 && queueHead * 2 > queue.length) {
      queue.splice(0, queueHead);
      queueHead = 0;
    }
    const waiting = queue.length - queueHead;
    while (!stopped && waiting > opening && connections.size < config.connections) openConnection();
  }

  // Requests that waited too long: counted as timeouts; their connection is dropped, as the apiserver does.
  const watchdog = setInterval(() => {
    const now = performance.now();
    for (const request of inFlight) {
      if (now > request.deadline) {
        request.timedOut = true;
        for (const connection of connections) if (connection.current === request) connection.destroy();
      }
    }
    for (let i = queueHead; i < queue.length; i++) {
      const request = queue[i];
      if (request && now > request.deadline) {
        (queue as (InFlight | undefined)[])[i] = undefined;
        fail(request, 'timeout');
      }
    }
    // Compact holes left by timed-out queued requests.
    if (queue.slice(queueHead).some((request) => request === undefined)) {
      const rest = queue.slice(queueHead).filter((request) => request !== undefined);
      queue.length = 0;
      queue.push(...rest);
      queueHead = 0;
    }
  }, 50);

  const cpuStart = { value: process.cpuUsage(), at: 0 };
  let cpuEnd: NodeJS.CpuUsage | undefined;
  let measureStart = 0;
  let measureEnd = 0;

  if (open) {
    const warmupCount = Math.round(rate * config.warmupSeconds);
    const total = warmupCount + Math.round(rate * config.durationSeconds);
    const intervalMs = 1000 / rate;
    afterResponse = (connection) => {
      idle.push(connection);
      pump();
    };
    // A warm pool first, like a running apiserver's; the schedule starts once it is connected.
    const initial = Math.min(config.connections, config.initialConnections ?? 4);
    for (let i = 0; i < initial; i++) openConnection();
    const poolDeadline = performance.now() + 10_000;
    while (opening > 0 && performance.now() < poolDeadline) await new Promise((resolve) => setTimeout(resolve, 5));
    const start = performance.now() + 20;
    measureStart = start + warmupCount * intervalMs;
    measureEnd = start + total * intervalMs;
    let next = 0;
    await new Promise<void>((resolve) => {
      const tick = () => {
        const now = performance.now();
        if (cpuStart.at === 0 && now >= measureStart) {
          cpuStart.value = process.cpuUsage();
          cpuStart.at = now;
        }
        let added = false;
        while (next < total && start + next * intervalMs <= now) {
          const scheduled = start + next * intervalMs;
          const record = next >= warmupCount;
          if (record) measured++;
          queue.push({ seq: next, scheduled, sent: 0, uid: uidOf(next), deadline: scheduled + timeoutMs, record });
          outstanding++;
          next++;
          added = true;
        }
        if (added) pump();
        if (next >= total) {
          resolve();
          return;
        }
        const wait = start + next * intervalMs - performance.now();
        // Sleep on a timer when the next send is far; otherwise spin through the event loop (still
        // serving I/O) so sends leave on time. The generator has a core of its own.
        if (wait > 2) setTimeout(tick, wait - 1.5);
        else setImmediate(tick);
      };
      setTimeout(tick, 20);
    });
  } else {
    // Closed loop: open the connections first (not measured), then each loops on its own.
    let seq = 0;
    let sendingUntil = 0;
    let warmEnd = 0;
    afterResponse = (connection) => {
      const now = performance.now();
      if (stopped || now >= sendingUntil || seq >= capacity * 2) {
        idle.push(connection);
        return;
      }
      const record = now >= warmEnd;
      if (record) measured++;
      const request: InFlight = { seq, scheduled: now, sent: now, uid: uidOf(seq), deadline: now + timeoutMs, record };
      seq++;
      outstanding++;
      sendOn(connection, request);
    };
    // A connection the server closed is replaced, as the apiserver's pool would.
    connectionLost = () => {
      if (!stopped && performance.now() < sendingUntil && opened < config.connections * 100) openConnection();
    };
    const readyConnections = new Promise<void>((resolve, reject) => {
      const started = performance.now();
      const check = setInterval(() => {
        if (idle.length >= config.connections) {
          clearInterval(check);
          resolve();
        } else if (performance.now() - started > 10_000) {
          clearInterval(check);
          reject(new Error(`only ${idle.length} of ${config.connections} connections opened within 10 s`));
        }
      }, 5);
    });
    sendingUntil = Infinity;
    stopped = true; // connections park as idle until released
    for (let i = 0; i < config.connections; i++) openConnection();
    await readyConnections;
    stopped = false;
    const now = performance.now();
    warmEnd = now + warmupMs;
    sendingUntil = warmEnd + durationMs;
    measureStart = warmEnd;
    measureEnd = sendingUntil;
    const starting = idle.splice(0, idle.length);
    for (const connection of starting) afterResponse(connection);
    await new Promise<void>((resolve) => setTimeout(resolve, warmupMs));
    cpuStart.value = process.cpuUsage();
    cpuStart.at = performance.now();
    await new Promise<void>((resolve) => setTimeout(resolve, durationMs));
  }
  cpuEnd = process.cpuUsage(cpuStart.value);
  const cpuWall = performance.now() - cpuStart.at;

  // Drain what is still queued or in flight, bounded by the request timeout.
  const drainDeadline = performance.now() + timeoutMs + 1000;
  while (outstanding > 0 && performance.now() < drainDeadline) await new Promise((resolve) => setTimeout(resolve, 10));
  stopped = true;
  clearInterval(watchdog);
  for (let i = queueHead; i < queue.length; i++) if (queue[i]?.record) errors.notSent++;
  for (const request of inFlight) if (request.record) errors.timeout++;
  for (const connection of connections) connection.destroy();

  if (config.samplesFile && scheduledAt) {
    const triples = new Float64Array(recorded * 3);
    for (let i = 0; i < recorded; i++) {
      triples[i * 3] = scheduledAt[i] - measureStart;
      triples[i * 3 + 1] = latency[i];
      triples[i * 3 + 2] = service[i];
    }
    fs.writeFileSync(config.samplesFile, Buffer.from(triples.buffer, triples.byteOffset, triples.byteLength));
  }
  const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
  // Open loop: over the span from the first measured scheduled send to the last measured answer.
  // Closed loop: answers over the measured window (sends stop at its end).
  const span = open ? Math.max(lastMeasuredDone, measureEnd) - Math.min(firstMeasuredSend, measureStart) : measureEnd - measureStart;
  return {
    mode: config.mode,
    rate: config.rate,
    durationSeconds: config.durationSeconds,
    measured,
    ok,
    errors,
    errorCount,
    badAnswers,
    latencyUs: distribution(latency, recorded),
    serviceUs: distribution(service, recorded),
    sendDelayUs: distribution(sendDelay, recorded),
    throughput: ok / (span / 1000),
    connectionsOpened: opened,
    peakConnections: peak,
    generatorCpuPercent: ((cpuEnd.user + cpuEnd.system) / 1000 / cpuWall) * 100,
    responseBytes,
    answeredTotal,
    cpuTotalMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
  };
}

/**
 * A generator's life as its own process: `run` with its config from argv[2], its result printed as one
 * line of JSON (exit 0); a failure on stderr (exit 2); no result within `limitMs(config)`, exit 3.
 */
export function runAsProcess<C, R>(label: string, limitMs: (config: C) => number, run: (config: C) => Promise<R>): void {
  const config = JSON.parse(process.argv[2] ?? '{}') as C;
  const limit = limitMs(config);
  const guard = setTimeout(() => {
    process.stderr.write(`${label}: no result within ${limit} ms; giving up\n`);
    process.exit(3);
  }, limit);
  run(config).then(
    (result) => {
      clearTimeout(guard);
      process.stdout.write(JSON.stringify(result) + '\n');
      process.exit(0);
    },
    (error) => {
      clearTimeout(guard);
      process.stderr.write(`${label} failed: ${(error as Error)?.stack ?? String(error)}\n`);
      process.exit(2);
    },
  );
}

if (require.main === module) {
  runAsProcess<GeneratorConfig, GeneratorResult>(
    'load generator',
    (config) => (config.warmupSeconds + config.durationSeconds) * 1000 + (config.timeoutMs ?? 10_000) + 30_000,
    runGenerator,
  );
}
