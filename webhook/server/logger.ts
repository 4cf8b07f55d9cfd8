// Structured JSON logs, one line each. Callers pass identifiers (uid, kind, namespace, name), never
// object contents: pods carry secrets in env values.
//
// Lines are buffered: to stdout they are written every STDOUT_FLUSH_MS (or once 64 KiB are waiting),
// so under load one write(2) carries hundreds of admissions instead of one or two each (stdout is a
// pipe in a container, pipe writes are synchronous, and each wakes the reader: about a tenth of the
// server's CPU per request when written every event-loop turn). Exit flushes what is left; only a
// SIGKILL can lose the last few milliseconds of lines. A `write` function given by the caller is
// called once per event-loop turn instead.
import * as fs from 'node:fs';
import type { LogLevel } from '../config';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  readonly level: LogLevel;
  enabled(level: LogLevel): boolean;
  log(level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
  /** `log` with the fields already written as JSON members, each starting with a comma
   * (`,"uid":"abc","dryRun":false`): for the line logged on every admission. */
  logMembers(level: LogLevel, msg: string, members: string): void;
  /** Writes buffered lines now (before exit). */
  flush(): void;
}

/** Writes to stdout synchronously, whatever kind of file descriptor it is. */
function writeStdout(text: string): void {
  try {
    fs.writeSync(1, text);
  } catch {
    // stdout closed: nothing sensible left to do with a log line
  }
}

/** How long stdout lines may wait to be written together. */
export const STDOUT_FLUSH_MS = 10;
const FLUSH_AT_BYTES = 64 * 1024;

export function createLogger(level: LogLevel, writeTo?: (text: string) => void): Logger {
  const threshold = RANK[level];
  const write = writeTo ?? writeStdout;
  const schedule = writeTo ? (run: () => void) => void setImmediate(run) : (run: () => void) => void setTimeout(run, STDOUT_FLUSH_MS);
  let buffered = '';
  let scheduled = false;
  let lastMillis = -1;
  let lastTime = '';
  const flush = () => {
    scheduled = false;
    if (buffered === '') return;
    const text = buffered;
    buffered = '';
    write(text);
  };
  const append = (candidate: LogLevel, msg: string, members: string) => {
    const now = Date.now();
    if (now !== lastMillis) {
      lastMillis = now;
      lastTime = new Date(now).toISOString();
    }
    buffered += `{"time":"${lastTime}","level":"${candidate}","msg":${JSON.stringify(msg)}${members}}\n`;
    if (buffered.length >= FLUSH_AT_BYTES) flush();
    else if (!scheduled) {
      scheduled = true;
      schedule(flush);
    }
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
    flush,
  };
}
