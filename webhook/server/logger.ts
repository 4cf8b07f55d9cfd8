// Structured JSON logs, one line each. Callers pass identifiers (uid, kind, namespace, name), never
// object contents: pods carry secrets in env values.
import type { LogLevel } from '../config';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  readonly level: LogLevel;
  enabled(level: LogLevel): boolean;
  log(level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stdout.write(line)): Logger {
  const threshold = RANK[level];
  return {
    level,
    enabled: (candidate) => RANK[candidate] >= threshold,
    log(candidate, msg, fields) {
      if (RANK[candidate] < threshold) return;
      write(JSON.stringify({ time: new Date().toISOString(), level: candidate, msg, ...fields }) + '\n');
    },
  };
}
