// Clients that try to hold a webhook's connections while costing their sender almost nothing (issue
// 20): used by `npm run attack` (test/bench/attack.ts) at thousands of connections and by
// test/server/connection-attacks.test.ts at hundreds. Only ever to 127.0.0.1 (from any 127/8 address); every attack opens a
// bounded number of connections, reconnects a bounded number of times and stops when told.
import * as net from 'node:net';
import * as tls from 'node:tls';

export const ATTACK_KINDS = ['silent-tls', 'slow-body', 'slow-headers', 'slow-large-body', 'no-client-hello', 'reconnect', 'mix'] as const;
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
  const stats: AttackStats = { opened: 0, handshaken: 0, failed: 0, closedByServer: 0, got408: 0, answers: {}, reconnects: 0, peakOpen: 0 };
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
      if (status === '408') stats.got408++;
      else if (status) stats.answers[status] = (stats.answers[status] ?? 0) + 1;
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
