// The HTTP/2 streams in flight on the webhook port, across every session: each held to the body rate
// of its own (a slow one is answered 408 and reset, its session kept), and their number capped
// (`maxStreams`: what their headers may hold is that many times the header limit, as one request per
// connection bounds it for HTTP/1.1). At the cap a new stream makes room by resetting the oldest
// stream waiting on its client, of the source holding the most streams, or is refused
// (REFUSED_STREAM, which an HTTP/2 client may retry) when every stream is being answered. A session
// whose client resets the streams it opened, unanswered (rapid
// reset, CVE-2023-44487: each stream costs the server its objects before the reset) is reported to
// the connection table, which counts them by source address and closes the session past the limit. The
// sessions themselves (their cap, idle close and shutdown) are the connection table's.

import { type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Stream, constants as http2Constants } from 'node:http2';

/** Why an HTTP/2 stream was reset with its session kept: `slow_body` answered 408 first; `evicted` to
 * make room at the stream cap; `refused` a new stream at the cap while every other is being answered. */
export type StreamResetReason = 'slow_body' | 'evicted' | 'refused';

/** How many of its own unanswered streams a client may reset: a token bucket per source address (the
 * connection table's), and nghttp2's own per session in Node 22. The apiserver resets a stream only at
 * its webhook timeout; an attacker's sessions from one address share one bucket, so a flood of them
 * costs a few hundred streams, not a hundred per session. */
export const CLIENT_RESETS = { perSecond: 20, burst: 200 } as const;

/** A session a stream came on, as the connection table holds it. */
export interface StreamSession {
  /** Its remote address. */
  readonly source: string;
  /** When its last stream started or closed. */
  since: number;
  /** Its streams in flight. */
  readonly streams: Set<TrackedStream>;
  /** Streams it has carried. */
  streamsSeen: number;
}

/** An HTTP/2 stream in flight: from its request's headers to its close. */
export interface TrackedStream {
  readonly session: StreamSession;
  readonly req: Http2ServerRequest;
  readonly res: Http2ServerResponse;
  readonly stream: ServerHttp2Stream;
  readonly since: number;
  /** Body bytes received, and at the last sweep. */
  bytes: number;
  mark: number;
  /** Consecutive sweeps in which the body arrived slower than the minimum rate. */
  slow: number;
  /** The whole body is in. */
  received: boolean;
  /** Answered 408 for a slow body: reset at the next sweep if still open. */
  cut: boolean;
}

/**
 * A stream that waits on its client: for the rest of its body, or, its answer written, for the client
 * to take it (a client that opens no flow-control window keeps the answer in the session). An
 * apiserver's stream is in neither state for more than a moment.
 */
function waiting(tracked: TrackedStream): boolean {
  return !tracked.received || tracked.res.writableEnded;
}

/** Whether any of a session's streams is being answered: its body in and its answer not yet written. */
export function answeringStream(session: StreamSession): boolean {
  for (const tracked of session.streams) if (tracked.received && !tracked.res.writableEnded) return true;
  return false;
}

/** Seconds since `since` (performance.now()), to a tenth, for the log. */
export function secondsSince(since: number): number {
  return Math.round((performance.now() - since) / 100) / 10;
}

export class Http2Streams {
  private readonly all = new Set<TrackedStream>();
  /** Streams in flight by source address. */
  private readonly bySource = new Map<string, number>();
  /** Streams reset (their sessions kept), by reason. */
  readonly reset: Record<StreamResetReason, number> = { slow_body: 0, evicted: 0, refused: 0 };

  constructor(
    private readonly limits: { readonly maxStreams?: number; readonly minBodyBytesPerSecond: number },
    private readonly onReset: (reason: StreamResetReason, details: Record<string, unknown>) => void,
    /** A stream that `session`'s client reset before its answer. */
    private readonly onClientReset: (session: StreamSession) => void,
  ) {}

  /** Streams in flight. */
  get size(): number {
    return this.all.size;
  }

  /** A stream whose request's headers are in, at `now`. False when it was refused at the cap. */
  started(session: StreamSession, req: Http2ServerRequest, res: Http2ServerResponse, stream: ServerHttp2Stream, now: number): boolean {
    if (this.limits.maxStreams !== undefined && this.all.size >= this.limits.maxStreams && !this.makeRoom()) {
      this.reset.refused++;
      this.onReset('refused', { streams: this.all.size });
      stream.close(http2Constants.NGHTTP2_REFUSED_STREAM);
      return false;
    }
    const tracked: TrackedStream = { session, req, res, stream, since: now, bytes: 0, mark: 0, slow: 0, received: false, cut: false };
    this.all.add(tracked);
    session.streams.add(tracked);
    session.streamsSeen++;
    session.since = now;
    this.bySource.set(session.source, (this.bySource.get(session.source) ?? 0) + 1);
    req.on('data', (chunk: Buffer) => (tracked.bytes += chunk.length));
    req.once('end', () => (tracked.received = true));
    // 'aborted': closed before its answer was written. Still counted here, so not by the server (every
    // reset of the server's own, and a session's close, takes it out of the count first): its client
    // reset it.
    stream.once('aborted', () => {
      if (this.all.has(tracked)) this.onClientReset(session);
    });
    stream.once('close', () => this.closed(tracked));
    return true;
  }

  /** Out of the count, once: when its stream closes, or when it (or its session) is closed here. */
  closed(tracked: TrackedStream): void {
    if (!this.all.delete(tracked)) return;
    const { session } = tracked;
    session.streams.delete(tracked);
    session.since = performance.now();
    const left = (this.bySource.get(session.source) ?? 1) - 1;
    if (left === 0) this.bySource.delete(session.source);
    else this.bySource.set(session.source, left);
  }

  /** One sweep of a session's streams: each held to the body rate (`minBytes` since the last sweep). */
  sweep(session: StreamSession, late: boolean, minBytes: number, slowSweeps: number): void {
    for (const tracked of session.streams) {
      if (tracked.cut) {
        this.closed(tracked);
        tracked.stream.close(http2Constants.NGHTTP2_CANCEL);
        continue;
      }
      if (tracked.received) continue;
      const got = tracked.bytes - tracked.mark;
      tracked.mark = tracked.bytes;
      if (late || got >= minBytes) {
        tracked.slow = 0;
        continue;
      }
      if (++tracked.slow < slowSweeps) continue;
      this.cutSlow(tracked);
    }
  }

  /**
   * At the cap: resets the oldest stream that is `waiting` on its client (never one being answered),
   * of the source holding the most streams if it has one, else of any source. False when every stream
   * in flight is being answered.
   */
  private makeRoom(): boolean {
    let heaviest: string | undefined;
    let most = 0;
    for (const [source, count] of this.bySource) {
      if (count > most) {
        heaviest = source;
        most = count;
      }
    }
    const victim = this.oldestWaiting(heaviest) ?? this.oldestWaiting(undefined);
    if (victim === undefined) return false;
    this.reset.evicted++;
    this.onReset('evicted', { streams: this.all.size, seconds: secondsSince(victim.since) });
    this.closed(victim);
    victim.stream.close(http2Constants.NGHTTP2_CANCEL);
    return true;
  }

  /** The oldest stream of `source` (any when undefined) that is `waiting`. */
  private oldestWaiting(source: string | undefined): TrackedStream | undefined {
    let oldest: TrackedStream | undefined;
    for (const tracked of this.all) {
      if (source !== undefined && tracked.session.source !== source) continue;
      if (waiting(tracked) && (oldest === undefined || tracked.since < oldest.since)) oldest = tracked;
    }
    return oldest;
  }

  /** Answers a slow stream 408 and resets it once the answer is out (its session is kept). */
  private cutSlow(tracked: TrackedStream): void {
    const { res, stream } = tracked;
    this.reset.slow_body++;
    this.onReset('slow_body', { streams: this.all.size, seconds: secondsSince(tracked.since) });
    tracked.cut = true;
    if (!res.headersSent && !stream.destroyed) {
      const text = JSON.stringify({ error: { code: 408, message: `request body arrived slower than ${this.limits.minBodyBytesPerSecond} bytes per second` } });
      res.writeHead(408, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
    }
    // RST_STREAM once the answer is written (NO_ERROR: the client may stop sending the body). The
    // stream's close ends the request, which gives its bytes back to the memory budget. Not
    // req.destroy(error): a compatibility request has no 'error' listener, and one emitted would throw.
    stream.close(http2Constants.NGHTTP2_NO_ERROR);
  }
}
