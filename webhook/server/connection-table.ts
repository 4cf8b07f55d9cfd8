// Every open connection of a server, so that none is free to hold: a body that arrives too slowly is
// cut with 408, a connection that stays silent past the idle limit is closed quietly, and at the cap
// a new connection always gets in by closing the one silent or slow the longest (never an admission
// being answered while another can go). One sweep a second does the timing; a request costs a
// lookup and three fields written, no timer.
// Fair share by source address (nginx's limit_conn, Envoy's overload manager resetting the heaviest
// user first): at the cap the connection closed is one of the source that holds the most, so a light
// source (the apiserver: tens) never loses its connections to a heavy one. A new connection from a
// source already over its share takes the place of that source's own worst connection (silent, then
// slow, then idle): an attacker sharing the apiserver's address (a hostNetwork pod, a node-local proxy,
// SNAT) holds silent or slow connections, the apiserver's carry complete requests, so the apiserver's
// new connection displaces the attacker's and its pooled ones are never the ones displaced while the
// attacker holds one. Each such newcomer costs an RSA handshake, so a source gets a few a second (a
// token bucket); past that its new connection is closed at accept, before any TLS work (an accept and
// a close), so a source that only reconnects buys a handshake a few times a second, not per reconnect.
// HTTP/2: a connection is a session of many streams. The same table holds its connection (closed once
// idle past the limit, GOAWAY at shutdown); its streams are held by http2-streams.ts.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse, ServerHttp2Session, ServerHttp2Stream } from 'node:http2';
import type { Server as NetServer, Socket } from 'node:net';
import { CLIENT_RESETS, Http2Streams, type StreamResetReason, type StreamSession, type TrackedStream, answeringStream, secondsSince } from './http2-streams';

export type { StreamResetReason } from './http2-streams';

/** A request on the webhook port: HTTP/1.1, or an HTTP/2 stream through Node's compatibility API. */
export type WebhookRequest = IncomingMessage | Http2ServerRequest;
export type WebhookResponse = ServerResponse | Http2ServerResponse;

/** The HTTP/2 stream a request or its response is on; undefined for HTTP/1.1. */
export function http2StreamOf(message: WebhookRequest | WebhookResponse): ServerHttp2Stream | undefined {
  return (message as Partial<Http2ServerRequest | Http2ServerResponse>).stream;
}

export interface ConnectionLimits {
  /** Connections open at once; the next one makes room by closing another. */
  readonly maxConnections: number;
  /** A connection that has sent nothing since it was opened is closed quietly after this long. */
  readonly silentMs: number;
  /** A request body that arrives slower than this, in two consecutive sweeps, is cut with 408. */
  readonly minBodyBytesPerSecond: number;
  /**
   * At the cap, a new connection whose source address holds the most connections, more than
   * max(maxConnections / sources, this), is over its share: it displaces one of its source's own
   * connections when `displacements` allow, and is closed at accept otherwise. Undefined: every new
   * connection gets in, making room in the heaviest source.
   */
  readonly fairShareFloor?: number;
  /**
   * How often a source over its share may displace one of its own connections: a token bucket of
   * `burst` tokens refilled at `perSecond`, one per source. @default no displacement: closed at accept
   */
  readonly displacements?: { readonly perSecond: number; readonly burst: number };
  /** HTTP/2 streams in flight at once across every session; past it a new stream resets the oldest
   * one waiting for its body, or is refused. @default no cap */
  readonly maxStreams?: number;
}

export type ConnectionCloseReason = 'evicted' | 'displaced' | 'over_share' | 'silent' | 'slow_body' | 'reset_flood';
/** What the table tells its owner of: a connection closed, or an HTTP/2 stream reset. */
export type TableEvent = ConnectionCloseReason | `stream_${StreamResetReason}`;

/**
 * Whether a connection has sent nothing yet: no TLS socket (still in its handshake), or no cleartext
 * byte received. Read from the socket's count, never from a 'data' listener on it: adding one makes
 * Node's HTTP server stop parsing the socket natively and feed it through JavaScript stream events
 * instead, for the connection's whole life (about 6% more CPU per admission on a keep-alive
 * connection; a test in test/server/http.test.ts counts the socket's 'data' events to catch it).
 */
export function sentNothing(clear: Socket | undefined): boolean {
  return clear === undefined || clear.bytesRead === 0;
}

/** How often deadlines are checked. */
export const SWEEP_INTERVAL_MS = 1_000;
/** Consecutive sweeps below the minimum body rate before the body is cut. */
export const SLOW_SWEEPS = 2;

/** A source address's connections, its displacement tokens and its HTTP/2 client-reset tokens
 * (`CLIENT_RESETS`), each bucket refilled when next needed. */
interface Source {
  count: number;
  tokens: number;
  refilledAt: number;
  resetTokens: number;
  resetsRefilledAt: number;
}

interface Entry {
  /** The accepted TCP socket. */
  readonly raw: Socket;
  /** Its remote address: connections are shared fairly between these. */
  readonly source: string;
  /** The socket HTTP is read from: the TLS socket once handshaken (undefined before), or `raw`. */
  clear: Socket | undefined;
  /** When the connection was opened, or its last request started. */
  since: number;
  req: IncomingMessage | undefined;
  res: ServerResponse | undefined;
  /** The cleartext bytes read at the last sweep (or the request's start). */
  mark: number;
  /** Consecutive sweeps in which the body arrived slower than the minimum rate. */
  slow: number;
  /** Answered 408 for a slow body: closed at the next sweep if the client has not gone by then. */
  cut: boolean;
  /** HTTP/2: its session, and its streams in flight (`since` is then when the last one started or
   * closed; the entry is the streams' `StreamSession`). */
  session: ServerHttp2Session | undefined;
  streams: Set<TrackedStream> | undefined;
  /** HTTP/2: streams it has carried. */
  streamsSeen: number;
}

export class ConnectionTable {
  /** Every open connection, in the order they were opened (eviction compares `since`). */
  private readonly entries = new Map<Socket, Entry>();
  private readonly byClear = new WeakMap<Socket, Entry>();
  private readonly bySession = new WeakMap<ServerHttp2Session, Entry>();
  /** Open connections by source address; a source is deleted when its last one closes. */
  private readonly bySource = new Map<string, Source>();
  private readonly sweepTimer: NodeJS.Timeout;
  private lastSweep = performance.now();
  private readonly http2Streams: Http2Streams;
  /** Connections closed by this table, by reason. */
  readonly closed: Record<ConnectionCloseReason, number> = { evicted: 0, displaced: 0, over_share: 0, silent: 0, slow_body: 0, reset_flood: 0 };
  /** HTTP/2 streams reset by this table (their sessions kept), by reason. */
  readonly streamsReset: Readonly<Record<StreamResetReason, number>>;

  constructor(
    server: NetServer,
    private readonly limits: ConnectionLimits,
    private readonly onClose: (reason: TableEvent, details: Record<string, unknown>) => void,
    /** TLS: the HTTP socket is known at 'secureConnection'; plain HTTP: it is the accepted socket. */
    tls: boolean,
  ) {
    this.http2Streams = new Http2Streams(
      limits,
      (reason, details) => onClose(`stream_${reason}`, details),
      (session) => this.clientReset(session as Entry & StreamSession),
    );
    this.streamsReset = this.http2Streams.reset;
    server.on('connection', (raw: Socket) => this.opened(raw, tls ? undefined : raw));
    // Node's TLSSocket keeps the TCP socket it wraps as `_parent`.
    if (tls) server.on('secureConnection', (clear: Socket) => this.handshaken(clear, (clear as Socket & { _parent?: Socket })._parent));
    // An HTTP/2 session, created (and this emitted) as its TLS socket's 'secureConnection' is handled;
    // its socket is a proxy that hands out the TLS socket's own TCP socket.
    server.on('session', (session: ServerHttp2Session) => {
      const raw = (session.socket as Socket & { _parent?: Socket })._parent;
      const entry = raw && this.entries.get(raw);
      if (entry === undefined) return;
      entry.session = session;
      entry.streams = new Set();
      this.bySession.set(session, entry);
    });
    this.sweepTimer = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.sweepTimer.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  /** HTTP/2 streams in flight. */
  get streams(): number {
    return this.http2Streams.size;
  }

  /**
   * Called for every request once its headers are in, at `now` (performance.now()). False when an
   * HTTP/2 stream was refused at the stream cap: the request is not to be handled.
   */
  requestStarted(req: WebhookRequest, res: WebhookResponse, now = performance.now()): boolean {
    const stream = http2StreamOf(req);
    if (stream !== undefined) return this.streamStarted(req as Http2ServerRequest, res as Http2ServerResponse, stream, now);
    return this.http1RequestStarted(req as IncomingMessage, res as ServerResponse, now);
  }

  private http1RequestStarted(req: IncomingMessage, res: ServerResponse, now: number): boolean {
    const entry = this.byClear.get(req.socket);
    if (entry === undefined) return true;
    entry.req = req;
    entry.res = res;
    entry.mark = req.socket.bytesRead;
    entry.slow = 0;
    entry.since = now;
    return true;
  }

  private streamStarted(req: Http2ServerRequest, res: Http2ServerResponse, stream: ServerHttp2Stream, now: number): boolean {
    const entry = this.bySession.get(stream.session as ServerHttp2Session);
    if (entry?.streams === undefined) return true;
    return this.http2Streams.started(entry as Entry & StreamSession, req, res, stream, now);
  }

  stop(): void {
    clearInterval(this.sweepTimer);
  }

  /**
   * Shutdown, once the listener is closed: every connection with no request in flight is closed at
   * once (never a request, part of one, or its last answer written), since no client will be told
   * to go elsewhere on it any more; a request in flight is answered with `Connection: close`, so its
   * connection closes once the answer is written. A client that sends a request on a pooled
   * connection at this very moment sees it closed, as with any server that closes idle connections;
   * the drain before this is what moves clients away first.
   */
  closeIdle(): { closed: number; inFlight: number } {
    let closed = 0;
    let inFlight = 0;
    for (const entry of this.entries.values()) {
      if (entry.streams !== undefined) {
        // HTTP/2: a GOAWAY lets the streams in flight finish and refuses new ones; the session
        // closes after its last stream.
        if (entry.streams.size === 0) {
          closed++;
          this.drop(entry);
        } else {
          inFlight += entry.streams.size;
          entry.session!.close();
        }
        continue;
      }
      const { res } = entry;
      if (entry.cut || res === undefined || res.writableFinished) {
        closed++;
        this.drop(entry);
        continue;
      }
      inFlight++;
      // Node closes the connection after an answer that says so; one whose head is out already (an
      // answer being written) is closed once it is.
      if (!res.headersSent) res.setHeader('Connection', 'close');
      else res.once('finish', () => this.drop(entry));
    }
    return { closed, inFlight };
  }

  /** Closes every connection (the shutdown timeout); returns how many. */
  closeAll(): number {
    const count = this.entries.size;
    for (const entry of this.entries.values()) this.drop(entry);
    return count;
  }

  /** Open connections from one source address. */
  connectionsFrom(source: string): number {
    return this.bySource.get(source)?.count ?? 0;
  }

  private opened(raw: Socket, clear: Socket | undefined): void {
    const since = performance.now();
    const entry: Entry = { raw, source: raw.remoteAddress ?? '', clear, since, req: undefined, res: undefined, mark: 0, slow: 0, cut: false, session: undefined, streams: undefined, streamsSeen: 0 };
    this.entries.set(raw, entry);
    if (clear) this.byClear.set(clear, entry);
    const source = this.bySource.get(entry.source);
    if (source) source.count++;
    else this.bySource.set(entry.source, { count: 1, tokens: this.limits.displacements?.burst ?? 0, refilledAt: since, resetTokens: CLIENT_RESETS.burst, resetsRefilledAt: since });
    raw.once('close', () => this.forget(entry));
    if (this.entries.size > this.limits.maxConnections) this.makeRoomFor(entry, since);
  }

  /** Out of the table, once: when its socket closes or when the table closes it. */
  private forget(entry: Entry): void {
    if (!this.entries.delete(entry.raw)) return;
    const source = this.bySource.get(entry.source)!;
    if (--source.count === 0) this.bySource.delete(entry.source);
  }

  /**
   * At the cap: the victim comes from the source holding the most connections. When that is the
   * newcomer's own source and it holds more than its fair share, the victim is that source's worst
   * connection if it may displace one now, and otherwise the newcomer itself, closed before its TLS
   * handshake has started (the 'connection' event comes before any byte is read).
   */
  private makeRoomFor(newcomer: Entry, now: number): void {
    const floor = this.limits.fairShareFloor;
    if (floor === undefined) {
      this.evictFor(newcomer.raw, undefined);
      return;
    }
    const mine = this.bySource.get(newcomer.source)!;
    let heaviest = newcomer.source;
    let most = mine.count;
    for (const [address, source] of this.bySource) {
      if (source.count > most) {
        heaviest = address;
        most = source.count;
      }
    }
    if (heaviest !== newcomer.source || mine.count <= Math.max(Math.floor(this.limits.maxConnections / this.bySource.size), floor)) {
      this.evictFor(newcomer.raw, heaviest);
      return;
    }
    const victim = this.mayDisplace(mine, now) ? this.victimFor(newcomer.raw, newcomer.source, false) : undefined;
    if (victim === undefined) {
      this.close(newcomer, 'over_share');
      return;
    }
    mine.tokens--;
    this.close(victim, 'displaced');
  }

  /** An HTTP/2 stream its client reset before its answer: past its source's `CLIENT_RESETS`, the
   * session is closed (rapid reset). */
  private clientReset(entry: Entry): void {
    const source = this.bySource.get(entry.source);
    if (source === undefined) return;
    const now = performance.now();
    source.resetTokens = Math.min(CLIENT_RESETS.burst, source.resetTokens + ((now - source.resetsRefilledAt) * CLIENT_RESETS.perSecond) / 1000);
    source.resetsRefilledAt = now;
    if (source.resetTokens >= 1) source.resetTokens--;
    else if (this.entries.has(entry.raw)) this.close(entry, 'reset_flood');
  }

  /** Whether `source` has a displacement token left, refilling its bucket first. */
  private mayDisplace(source: Source, now: number): boolean {
    const rate = this.limits.displacements;
    if (rate === undefined) return false;
    source.tokens = Math.min(rate.burst, source.tokens + ((now - source.refilledAt) * rate.perSecond) / 1000);
    source.refilledAt = now;
    return source.tokens >= 1;
  }

  private handshaken(clear: Socket, raw: Socket | undefined): void {
    let entry = raw && this.entries.get(raw);
    if (entry === undefined) {
      // Not seen at accept (no `_parent`): tracked from now on, by the TLS socket itself.
      this.opened(clear, clear);
      return;
    }
    entry.clear = clear;
    this.byClear.set(clear, entry);
  }

  /** An admission being answered: its body is in and its answer not yet written (HTTP/2: any of its streams'). */
  private answering(entry: Entry): boolean {
    if (entry.streams !== undefined) return answeringStream(entry as Entry & StreamSession);
    return entry.req !== undefined && entry.res !== undefined && !entry.res.writableEnded && (entry.req.complete || entry.slow === 0);
  }

  /** Closes the connection `victimFor` picks in `source` (any source when undefined) for `newcomer`. */
  private evictFor(newcomer: Socket, source: string | undefined): void {
    const victim = this.victimFor(newcomer, source, true);
    if (victim) this.close(victim, 'evicted');
    // The heaviest source held only the newcomer (every source holds one): any other makes room.
    else if (source !== undefined) this.evictFor(newcomer, undefined);
  }

  /**
   * Which connection makes room, in this order: one that has never sent a request (silent, or still
   * in its handshake), then one whose request is slower than the minimum rate or incomplete, then an
   * idle keep-alive connection (one that has carried an admission: most likely an apiserver's, and
   * closing it races the request its client may be sending that moment), and, when `busy` allows and
   * every other connection is being answered, one being answered. The oldest first in each class.
   */
  private victimFor(newcomer: Socket, source: string | undefined, busy: boolean): Entry | undefined {
    let slow: Entry | undefined;
    let idle: Entry | undefined;
    let answering: Entry | undefined;
    const older = (a: Entry | undefined, b: Entry): Entry => (a === undefined || b.since < a.since ? b : a);
    for (const entry of this.entries.values()) {
      if (entry.raw === newcomer || (source !== undefined && entry.source !== source)) continue;
      if (entry.streams !== undefined) {
        // HTTP/2: a session being answered; one with streams all waiting for their bodies, or that
        // has never had a stream, is slow; one that has had streams and has none now is idle.
        if (this.answering(entry)) answering = older(answering, entry);
        else if (entry.streams.size > 0 || entry.streamsSeen === 0) slow = older(slow, entry);
        else idle = older(idle, entry);
        continue;
      }
      if (entry.req === undefined) {
        // Never a request (the table is in the order connections were opened: the first such is the
        // oldest); a partial one counts as slow (its headers are still arriving).
        if (sentNothing(entry.clear)) return entry;
        slow = older(slow, entry);
      } else if (this.answering(entry)) answering = older(answering, entry);
      else if (!entry.req.complete) slow = older(slow, entry);
      else idle = older(idle, entry);
    }
    return slow ?? idle ?? (busy ? answering : undefined);
  }

  /** Counts a connection closed (or a body cut) for `reason` and tells `onClose`. */
  private report(entry: Entry, reason: ConnectionCloseReason): void {
    this.closed[reason]++;
    this.onClose(reason, { open: this.entries.size, seconds: secondsSince(entry.since) });
  }

  private close(entry: Entry, reason: ConnectionCloseReason): void {
    this.forget(entry);
    // A body cut with 408 was reported when it was cut.
    if (!entry.cut) this.report(entry, reason);
    this.drop(entry);
  }

  /** Out of the table and closed, unreported. */
  private drop(entry: Entry): void {
    this.forget(entry);
    if (entry.streams !== undefined) for (const tracked of [...entry.streams]) this.http2Streams.closed(tracked);
    entry.session?.destroy();
    // The TLS socket first: destroying the TCP socket under it would make Node answer the reset.
    entry.clear?.destroy();
    entry.raw.destroy();
  }

  private sweep(): void {
    const now = performance.now();
    // After a long pause of the event loop (a GC, a burst of work) the bytes counted are stale:
    // nobody is judged slow on that sweep.
    const late = now - this.lastSweep > SWEEP_INTERVAL_MS * 1.5;
    this.lastSweep = now;
    const minBytes = (this.limits.minBodyBytesPerSecond * SWEEP_INTERVAL_MS) / 1000;
    for (const entry of this.entries.values()) {
      if (entry.streams !== undefined) {
        this.sweepSession(entry, now, late, minBytes);
        continue;
      }
      const { req, res, clear } = entry;
      if (entry.cut) {
        this.close(entry, 'slow_body');
        continue;
      }
      if (req === undefined || res === undefined) {
        // Silent since it was opened (or still in its handshake, which has its own deadline).
        if (now - entry.since > this.limits.silentMs && sentNothing(clear)) this.close(entry, 'silent');
        continue;
      }
      if (req.complete || clear === undefined) continue;
      const read = clear.bytesRead;
      const got = read - entry.mark;
      entry.mark = read;
      if (late) {
        entry.slow = 0;
        continue;
      }
      if (got >= minBytes) {
        entry.slow = 0;
        continue;
      }
      if (++entry.slow < SLOW_SWEEPS) continue;
      this.cutSlowBody(entry, req, res);
    }
  }

  /** HTTP/2: each stream held to the body rate; the session closed once idle past `silentMs`. */
  private sweepSession(entry: Entry, now: number, late: boolean, minBytes: number): void {
    if (entry.streams!.size > 0) this.http2Streams.sweep(entry as Entry & StreamSession, late, minBytes, SLOW_SWEEPS);
    else if (now - entry.since > this.limits.silentMs) this.close(entry, 'silent');
  }

  private cutSlowBody(entry: Entry, req: IncomingMessage, res: ServerResponse): void {
    if (res.headersSent || res.destroyed) {
      // An answer (a 413 or 429 decided from the declared length) is out; Node drains the rest.
      this.close(entry, 'slow_body');
      return;
    }
    this.report(entry, 'slow_body');
    const text = JSON.stringify({
      error: { code: 408, message: `request body arrived slower than ${this.limits.minBodyBytesPerSecond} bytes per second` },
    });
    res.writeHead(408, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), Connection: 'close' }).end(text);
    // The request's own 'close' is what gives its bytes back to the memory budget (the admission
    // handler listens for it): once its response is written, Node would close the socket without
    // emitting it.
    req.destroy(new Error(`body arrived slower than ${this.limits.minBodyBytesPerSecond} bytes per second (answered 408)`));
    // Not waiting for the client to read it: the connection is cut at the next sweep at the latest.
    entry.cut = true;
  }
}
