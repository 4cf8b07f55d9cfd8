// Structured JSON logs, one line each. Callers pass identifiers (uid, kind, namespace, name), never
// object contents: pods carry secrets in env values.
//
// Lines are buffered: to stdout they are written every STDOUT_FLUSH_MS (or once 64 KiB are waiting),
// so under load one write(2) carries hundreds of admissions instead of one or two each (stdout is a
// pipe in a container, and each write wakes the reader: about a tenth of the server's CPU per request
// when written every event-loop turn). A `write` function given by the caller is called once per
// event-loop turn instead. The per-admission line goes further (logLater): it is formatted with the
// batch, not when it is logged.
//
// Stdout never blocks the event loop: a log reader that falls behind (a container runtime on a slow
// disk, a full pipe) must not hold up admissions, which the apiserver times out. Stdout is made
// non-blocking; what the pipe does not take yet waits, up to MAX_BACKLOG_BYTES, and is retried every
// STDOUT_FLUSH_MS; past that, new lines are dropped, counted (`droppedLines`, in /metrics) and
// reported in one warn line once stdout takes writes again. Lines are written whole or not at all
// from the reader's point of view: a partial write keeps the rest for the next try. Exit flushes what
// is left, waiting up to EXIT_FLUSH_MS for a slow reader; only a SIGKILL loses lines without a count.
import * as fs from 'node:fs';
import type { LogLevel } from '../config';
import { jsonString } from './json-text';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  readonly level: LogLevel;
  enabled(level: LogLevel): boolean;
  log(level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
  /** `log` with the fields already written as JSON members, each starting with a comma
   * (`,"uid":"abc","dryRun":false`): for the line logged on every admission. */
  logMembers(level: LogLevel, msg: string, members: string): void;
  /**
   * `logMembers` with the members written later: `members(fields)` runs when the buffered lines are
   * written out (within STDOUT_FLUSH_MS, or once MAX_LATER_LINES wait), in order with every other
   * line and with the time of this call. For the line logged on every admission: formatted in a batch,
   * its code stays in the CPU's instruction cache instead of being evicted between admissions by the
   * HTTP, TLS and JSON code. `fields` is kept until then, so it must hold only small values.
   */
  logLater<T>(level: LogLevel, msg: string, members: (fields: T) => string, fields: T): void;
  /** Lines dropped since start because stdout did not take them (its reader fell too far behind),
   * counting every line logged so far, logLater's included. */
  readonly droppedLines: number;
  /** Writes buffered lines now, waiting a little for a slow stdout reader (before exit). */
  flush(): void;
}

/** How long stdout lines may wait to be written together, and how often a full pipe is retried. */
export const STDOUT_FLUSH_MS = 10;
const FLUSH_AT_BYTES = 64 * 1024;
/** Log text held while stdout's reader is behind (about 3,500 admission lines): part of the memory
 * the sizing rule reserves for the server itself (MEMORY_RESERVED_BYTES), never request memory. */
export const MAX_BACKLOG_BYTES = 1024 * 1024;
/** Most lines waiting to be formatted (logLater); past it they are formatted at once. */
export const MAX_LATER_LINES = 256;
/** The longest exit waits for a stdout reader that is behind. */
const EXIT_FLUSH_MS = 2000;

/**
 * Makes stdout non-blocking when it is a pipe or a socket: Node's own stdout stream does so when it
 * is first used (libuv opens pipes non-blocking); for a file or a terminal it changes nothing, and
 * writes to those do not wait on a reader.
 */
function makeStdoutNonBlocking(): void {
  try {
    void process.stdout;
  } catch {
    // no usable stdout: writes will fail and be dropped
  }
}

/**
 * Writes `bytes` from `offset` to stdout as far as it takes them without waiting. Returns the offset
 * reached (all of `bytes` when everything was written), or -1 when stdout is gone (EPIPE, EBADF).
 */
function writeStdoutNonBlocking(bytes: Buffer, offset: number): number {
  let written = offset;
  while (written < bytes.length) {
    try {
      written += fs.writeSync(1, bytes, written, bytes.length - written);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return written;
      if (code === 'EINTR') continue;
      return -1;
    }
  }
  return written;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export function createLogger(level: LogLevel, writeTo?: (text: string) => void): Logger {
  const threshold = RANK[level];
  if (!writeTo) makeStdoutNonBlocking();
  let buffered = '';
  let scheduled = false;
  let lastMillis = -1;
  let lastTime = '';
  /** Bytes taken from `buffered` that stdout has not taken yet, from `backlogOffset` on. */
  let backlog: Buffer | undefined;
  let backlogOffset = 0;
  let droppedLines = 0;
  let droppedUnreported = 0;

  /** Lines to format later, five entries each: level, msg, time, members function, fields. */
  const later: unknown[] = [];

  const line = (candidate: LogLevel, msg: string, members: string, now: number): string => {
    if (now !== lastMillis) {
      lastMillis = now;
      lastTime = new Date(now).toISOString();
    }
    return `{"time":"${lastTime}","level":"${candidate}","msg":${jsonString(msg)}${members}}\n`;
  };

  /** One attempt to hand everything waiting to stdout; true when nothing is left waiting. The
   * backlog is written before newer lines are encoded, so a slow reader costs no copying. */
  const writeStdout = (): boolean => {
    for (;;) {
      if (backlog === undefined) {
        if (buffered === '') return true;
        backlog = Buffer.from(buffered, 'utf8');
        backlogOffset = 0;
        buffered = '';
      }
      const reached = writeStdoutNonBlocking(backlog, backlogOffset);
      if (reached >= 0 && reached < backlog.length) {
        backlogOffset = reached;
        return false;
      }
      backlog = undefined;
      if (reached < 0) {
        // Stdout is gone: nothing can be done with the lines.
        buffered = '';
        return true;
      }
      if (droppedUnreported > 0) {
        buffered += line('warn', 'log lines dropped: stdout was not read fast enough', `,"dropped":${droppedUnreported},"droppedSinceStart":${droppedLines}`, Date.now());
        droppedUnreported = 0;
      }
    }
  };

  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    if (writeTo) setImmediate(drain);
    else setTimeout(drain, STDOUT_FLUSH_MS);
  };

  function drain(): void {
    scheduled = false;
    if (later.length > 0) formatLater();
    if (writeTo) {
      if (buffered === '') return;
      const text = buffered;
      buffered = '';
      writeTo(text);
      return;
    }
    if (!writeStdout()) schedule();
  }

  /** Adds a line to what is buffered, or counts it dropped when stdout's reader is too far behind. */
  const push = (text: string): void => {
    if (!writeTo && buffered.length + text.length + (backlog === undefined ? 0 : backlog.length - backlogOffset) > MAX_BACKLOG_BYTES) {
      droppedLines++;
      droppedUnreported++;
      return;
    }
    buffered += text;
  };

  /** Past 64 KiB write now, unless stdout is behind: then the scheduled retry writes. */
  const afterPush = (): void => {
    if (buffered.length >= FLUSH_AT_BYTES && backlog === undefined) drain();
    else schedule();
  };

  /** Writes the waiting logLater lines into the buffer, in order. */
  function formatLater(): void {
    for (let i = 0; i < later.length; i += 5) {
      const candidate = later[i] as LogLevel;
      const msg = later[i + 1] as string;
      const time = later[i + 2] as number;
      let members: string;
      try {
        members = (later[i + 3] as (fields: unknown) => string)(later[i + 4]);
      } catch (error) {
        // A line that cannot be written must not take the others with it.
        push(line('error', 'could not write a log line', `,"line":${jsonString(msg)},"error":${jsonString(String((error as Error)?.message))}`, time));
        continue;
      }
      push(line(candidate, msg, members, time));
    }
    later.length = 0;
  }

  const append = (candidate: LogLevel, msg: string, members: string): void => {
    if (later.length > 0) formatLater(); // lines keep the order they were logged in
    push(line(candidate, msg, members, Date.now()));
    afterPush();
  };

  return {
    level,
    enabled: (candidate) => RANK[candidate] >= threshold,
    log(candidate, msg, fields) {
      if (RANK[candidate] < threshold) return;
      const rest = fields ? JSON.stringify(fields) : '{}';
      append(candidate, msg, rest === '{}' ? '' : ',' + rest.slice(1, -1));
    },
    logMembers(candidate, msg, members) {
      if (RANK[candidate] >= threshold) append(candidate, msg, members);
    },
    logLater(candidate, msg, members, fields) {
      if (RANK[candidate] < threshold) return;
      later.push(candidate, msg, Date.now(), members, fields);
      if (later.length >= MAX_LATER_LINES * 5) {
        formatLater();
        afterPush();
      } else schedule();
    },
    get droppedLines() {
      // Lines still waiting to be formatted are formatted now (their flush is already scheduled), so
      // the count covers every line logged so far: each is buffered, written, or counted here.
      if (later.length > 0) formatLater();
      return droppedLines;
    },
    flush() {
      if (later.length > 0) formatLater();
      if (writeTo) {
        drain();
        return;
      }
      const deadline = performance.now() + EXIT_FLUSH_MS;
      while (!writeStdout() && performance.now() < deadline) sleepSync(5);
    },
  };
}
