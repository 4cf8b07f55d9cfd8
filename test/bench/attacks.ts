// Clients that try to hold a webhook's connections while costing their sender almost nothing (issue
// 20): used by `npm run attack` (test/bench/attack.ts) at thousands of connections and by
// test/server/connection-attacks.test.ts at hundreds. Only ever to 127.0.0.1 (from any 127/8 address); every attack opens a
// bounded number of connections, reconnects a bounded number of times and stops when told.
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as tls from 'node:tls';

export const HTTP2_ATTACK_KINDS = ['h2-stream-flood', 'h2-slow-streams', 'h2-rapid-reset'] as const;
export const ATTACK_KINDS = ['silent-tls', 'slow-body', 'slow-headers', 'slow-large-body', 'no-client-hello', 'reconnect', 'mix', ...HTTP2_ATTACK_KINDS] as const;
/** HTTP/2 attackers: sessions, each with many streams; at most this many sessions per attack. */
export const HTTP2_ATTACK_SESSIONS = 200;
/** The slow-stream attack stays under the stream cap (the connection cap, 384 at 192Mi), so what cuts
 * its streams is the body rate, not the cap. */
export const HTTP2_SLOW_SESSIONS = 20;
export type AttackKind = (typeof ATTACK_KINDS)[number];

/** What each kind does, for reports. */
export const ATTACK_DESCRIPTIONS: Record<AttackKind, string> = {
  'silent-tls': '(a) TLS connections that complete the handshake and send nothing',
  'slow-body': '(b) declare a 5 KB body, send 10 bytes every 2 s',
  'slow-headers': '(c) send a request line, then a header byte every 2 s',
  'slow-large-body': '(d) declare a 7 MiB body, send 1 KiB every 2 s',
  'no-client-hello': '(e) TCP connections that never send a ClientHello',
  reconnect: '(f) silent TLS connections that reconnect as soon as they are cut',
  mix: '(g) a fifth each of (a) to (e), every one reconnecting when cut',
  'h2-stream-flood': `(h) HTTP/2: up to ${HTTP2_ATTACK_SESSIONS} sessions, each opening every stream it may (100) with a 5 KB body declared and 1 byte sent, reopening each stream the server resets`,
  'h2-slow-streams': `(i) HTTP/2: up to ${HTTP2_SLOW_SESSIONS} sessions of 10 streams each (under the stream cap), 10 bytes of a 5 KB body every 2 s per stream, reopened when cut`,
  'h2-rapid-reset': `(j) HTTP/2: up to ${HTTP2_ATTACK_SESSIONS} sessions, each opening 100 streams and resetting them at once, every 2 s (CVE-2023-44487), reconnecting when closed`,
};

type Behaviour = 'silent-tls' | 'slow-body' | 'slow-headers' | 'slow-large-body' | 'no-client-hello';
const BEHAVIOURS: readonly Behaviour[] = ['silent-tls', 'slow-body', 'slow-headers', 'slow-large-body', 'no-client-hello'];

export interface AttackOptions {
  readonly port: number;
  /** Attacker connections (open at once, at most). */
  readonly connections: number;
  /** SNI the TLS attackers present (they do not check the certificate). */
  readonly servername: string;
  /** Handshakes in progress at once while opening (keeps under the listen backlog). @default 200 */
  readonly openingAtOnce?: number;
  /** Reconnects per attacker, at most, for the reconnecting kinds. @default 1000 */
  readonly maxReconnectsEach?: number;
  /** How often the slow attackers send their next bytes. @default 2000 */
  readonly tickMs?: number;
  /** The source addresses the attackers connect from, in turn (attackers are other pods than the
   * apiserver). @default the system's choice (127.0.0.1) */
  readonly localAddresses?: readonly string[];
}

/** The address the apiserver's stand-ins (the probe loop, the load generator, the tests' admissions)
 * connect from. */
export const APISERVER_ADDRESS = '127.0.0.1';

/** The attackers' source addresses in `npm run attack` and its scaled-down test: another pod than the
 * apiserver, and for the mix, ten pods; or, `shared`, the apiserver's own address (a hostNetwork pod
 * on a control-plane node, a node-local proxy, SNAT), every kind from that one. Any 127/8 address is
 * the loopback on Linux. */
export function attackerAddresses(kind: AttackKind, shared = false): readonly string[] {
  if (shared) return [APISERVER_ADDRESS];
  return kind === 'mix' ? Array.from({ length: 10 }, (_, i) => `127.0.1.${i + 1}`) : ['127.0.0.2'];
}

export interface AttackStats {
  /** Connections opened (TCP connected), reconnects included. */
  opened: number;
  /** TLS handshakes completed. */
  handshaken: number;
  /** Connections that failed before connecting or handshaking (refused, reset). */
  failed: number;
  /** Connections the server closed (or reset) after they were open. */
  closedByServer: number;
  /** Answers 408 received. */
  got408: number;
  /** Other answers received (first status line), by status. */
  answers: Record<string, number>;
  reconnects: number;
  /** The most attacker connections open at once. */
  peakOpen: number;
}

/** Stats before anything has happened. */
export function noAttackStats(): AttackStats {
  return { opened: 0, handshaken: 0, failed: 0, closedByServer: 0, got408: 0, answers: {}, reconnects: 0, peakOpen: 0 };
}

/** Counts an answer the server gave an attacker, by its status. */
function countAnswer(stats: AttackStats, status: string): void {
  if (status === '408') stats.got408++;
  else stats.answers[status] = (stats.answers[status] ?? 0) + 1;
}

export interface RunningAttack {
  readonly stats: AttackStats;
  /** Resolves once every attacker has been opened once (or failed). */
  readonly opened: Promise<void>;
  /** Closes every attacker connection; no reconnects after it. */
  stop(): Promise<void>;
}

interface Attacker {
  readonly behaviour: Behaviour;
  readonly localAddress: string | undefined;
  readonly reconnecting: boolean;
  socket: net.Socket | undefined;
  /** Connected (and handshaken) and its first bytes written: the ticker sends it more from then on. */
  started: boolean;
  /** Bytes of the body (or header) sent so far. */
  sent: number;
  reconnects: number;
}

const SLOW_BODY_BYTES = 5_000;
const LARGE_BODY_BYTES = 7 * 1024 * 1024;

export function startAttack(kind: AttackKind, options: AttackOptions): RunningAttack {
  if ((HTTP2_ATTACK_KINDS as readonly string[]).includes(kind)) return startHttp2Attack(kind as (typeof HTTP2_ATTACK_KINDS)[number], options);
  const stats = noAttackStats();
  const tickMs = options.tickMs ?? 2000;
  const maxReconnects = options.maxReconnectsEach ?? 1000;
  const openingAtOnce = options.openingAtOnce ?? 200;
  let stopped = false;
  let open = 0;
  let opening = 0;
  const queue: Attacker[] = [];
  const attackers: Attacker[] = [];
  for (let i = 0; i < options.connections; i++) {
    const behaviour = kind === 'reconnect' ? 'silent-tls' : kind === 'mix' ? BEHAVIOURS[i % BEHAVIOURS.length] : (kind as Behaviour);
    const localAddress = options.localAddresses?.length ? options.localAddresses[i % options.localAddresses.length] : undefined;
    attackers.push({ behaviour, localAddress, reconnecting: kind === 'reconnect' || kind === 'mix', socket: undefined, started: false, sent: 0, reconnects: 0 });
  }
  let firstRoundLeft = attackers.length;
  let openedResolve!: () => void;
  const opened = new Promise<void>((resolve) => (openedResolve = resolve));
  const firstRoundDone = () => {
    if (--firstRoundLeft === 0) openedResolve();
  };

  const pump = (): void => {
    while (!stopped && opening < openingAtOnce && queue.length > 0) connect(queue.shift()!);
  };

  const connect = (attacker: Attacker): void => {
    opening++;
    attacker.sent = 0;
    attacker.started = false;
    const first = attacker.reconnects === 0;
    let established = false;
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      opening--;
      if (first) firstRoundDone();
      pump();
    };
    const onOpen = () => {
      established = true;
      open++;
      if (open > stats.peakOpen) stats.peakOpen = open;
      settle();
      start(attacker);
    };
    // tls.connect hands its options to net.connect, localAddress included; its types do not say so.
    const from: net.TcpSocketConnectOpts | object = attacker.localAddress === undefined ? {} : { localAddress: attacker.localAddress };
    const socket =
      attacker.behaviour === 'no-client-hello'
        ? net.connect({ host: '127.0.0.1', port: options.port, localAddress: attacker.localAddress }, () => {
            stats.opened++;
            onOpen();
          })
        : tls.connect({ host: '127.0.0.1', port: options.port, ...from, servername: options.servername, rejectUnauthorized: false }, () => {
            stats.handshaken++;
            onOpen();
          });
    if (attacker.behaviour !== 'no-client-hello') socket.once('connect', () => stats.opened++);
    attacker.socket = socket;
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1', 0, 16))?.[1];
      if (status) countAnswer(stats, status);
    });
    socket.once('close', () => {
      attacker.socket = undefined;
      attacker.started = false;
      if (established) {
        open--;
        if (!stopped) stats.closedByServer++;
      } else {
        if (!stopped) stats.failed++;
        settle();
      }
      if (!stopped && attacker.reconnecting && attacker.reconnects < maxReconnects) {
        attacker.reconnects++;
        stats.reconnects++;
        queue.push(attacker);
        pump();
      }
    });
  };

  const start = (attacker: Attacker): void => {
    const socket = attacker.socket!;
    if (attacker.behaviour === 'slow-body') socket.write(`POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: ${SLOW_BODY_BYTES}\r\n\r\n`);
    else if (attacker.behaviour === 'slow-large-body') socket.write(`POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: ${LARGE_BODY_BYTES}\r\n\r\n`);
    else if (attacker.behaviour === 'slow-headers') socket.write('POST /mutate HTTP/1.1\r\n');
    attacker.started = true;
  };

  // One timer for every slow attacker: their next bytes, every tickMs.
  const tenBytes = Buffer.from('{"a":"bbb"');
  const oneKiB = Buffer.alloc(1024, 0x20);
  const ticker = setInterval(() => {
    for (const attacker of attackers) {
      const socket = attacker.socket;
      if (!socket || !attacker.started || socket.destroyed) continue;
      if (attacker.behaviour === 'slow-body' && attacker.sent < SLOW_BODY_BYTES - 10) {
        socket.write(tenBytes);
        attacker.sent += 10;
      } else if (attacker.behaviour === 'slow-large-body' && attacker.sent < LARGE_BODY_BYTES - 1024) {
        socket.write(oneKiB);
        attacker.sent += 1024;
      } else if (attacker.behaviour === 'slow-headers' && attacker.sent < 4000) {
        socket.write('X');
        attacker.sent++;
      }
    }
  }, tickMs);

  queue.push(...attackers);
  pump();

  return {
    stats,
    opened,
    async stop() {
      stopped = true;
      clearInterval(ticker);
      queue.length = 0;
      for (const attacker of attackers) attacker.socket?.destroy();
      openedResolve();
      // Let the close events run.
      await new Promise((resolve) => setTimeout(resolve, 100));
    },
  };
}

/** The HTTP/2 attacks: sessions that speak the protocol well and use it to hold streams or burn CPU. */
function startHttp2Attack(kind: (typeof HTTP2_ATTACK_KINDS)[number], options: AttackOptions): RunningAttack {
  const stats = noAttackStats();
  const sessions = Math.min(options.connections, kind === 'h2-slow-streams' ? HTTP2_SLOW_SESSIONS : HTTP2_ATTACK_SESSIONS);
  const tickMs = options.tickMs ?? 2000;
  const maxReconnects = options.maxReconnectsEach ?? 1000;
  const streamsEach = kind === 'h2-slow-streams' ? 10 : 100;
  let stopped = false;
  let open = 0;
  const live = new Set<http2.ClientHttp2Session>();
  const slowStreams = new Set<http2.ClientHttp2Stream>();
  let firstLeft = sessions;
  let openedResolve!: () => void;
  const opened = new Promise<void>((resolve) => (openedResolve = resolve));
  const firstDone = () => {
    if (--firstLeft === 0) openedResolve();
  };
  const headers = { ':method': 'POST', ':path': '/mutate', 'content-type': 'application/json', 'content-length': String(SLOW_BODY_BYTES) };

  const openStream = (session: http2.ClientHttp2Session, budget: { left: number }): void => {
    if (stopped || session.destroyed || session.closed) return;
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(headers, { endStream: false });
    } catch {
      return;
    }
    stream.on('error', () => undefined);
    stream.on('response', (h) => countAnswer(stats, String(h[':status'])));
    stream.resume();
    stream.write('{');
    if (kind === 'h2-slow-streams') slowStreams.add(stream);
    stream.once('close', () => {
      slowStreams.delete(stream);
      // The server reset or answered it: take its place again, a bounded number of times.
      if (!stopped && budget.left-- > 0) {
        stats.reconnects++;
        openStream(session, budget);
      }
    });
  };

  const connectOne = (index: number, reconnects: number): void => {
    const first = reconnects === 0;
    let established = false;
    const localAddress = options.localAddresses?.length ? options.localAddresses[index % options.localAddresses.length] : undefined;
    const session = http2.connect(`https://127.0.0.1:${options.port}`, {
      createConnection: () => tls.connect({ host: '127.0.0.1', port: options.port, servername: options.servername, rejectUnauthorized: false, ALPNProtocols: ['h2'], ...(localAddress ? { localAddress } : {}) } as tls.ConnectionOptions),
    });
    session.on('error', () => undefined);
    session.once('connect', () => {
      established = true;
      stats.opened++;
      stats.handshaken++;
      open++;
      stats.peakOpen = Math.max(stats.peakOpen, open);
      live.add(session);
      if (first) firstDone();
      const budget = { left: maxReconnects };
      if (kind !== 'h2-rapid-reset') for (let i = 0; i < streamsEach; i++) openStream(session, budget);
    });
    session.once('close', () => {
      live.delete(session);
      if (established) {
        open--;
        if (!stopped) stats.closedByServer++;
      } else {
        if (!stopped) stats.failed++;
        if (first) firstDone();
      }
      if (!stopped && reconnects < maxReconnects) {
        stats.reconnects++;
        setTimeout(() => connectOne(index, reconnects + 1), 10);
      }
    });
  };
  for (let i = 0; i < sessions; i++) connectOne(i, 0);

  const ticker = setInterval(() => {
    if (kind === 'h2-slow-streams') for (const stream of slowStreams) if (!stream.destroyed) stream.write('"a":"bbb",');
    if (kind === 'h2-rapid-reset') {
      for (const session of live) {
        for (let i = 0; i < streamsEach; i++) {
          try {
            const stream = session.request(headers, { endStream: false });
            stream.on('error', () => undefined);
            stream.close(http2.constants.NGHTTP2_CANCEL);
          } catch {
            break;
          }
        }
      }
    }
  }, tickMs);

  return {
    stats,
    opened,
    async stop() {
      stopped = true;
      clearInterval(ticker);
      for (const session of live) session.destroy();
      openedResolve();
      await new Promise((resolve) => setTimeout(resolve, 100));
    },
  };
}
