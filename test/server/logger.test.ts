// The log lines under a stdout reader that falls behind, as a container runtime on a slow disk does:
// the logger writes into a real pipe (64 KiB) whose reader sleeps first. Admissions must not wait for
// the reader, no line may be torn, and every line is either delivered or counted as dropped.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { MAX_BACKLOG_BYTES, MAX_LATER_LINES, createLogger } from '../../webhook/server/logger';

const REPO_ROOT = path.resolve(__dirname, '../..');
/** How long the reader sleeps before it reads anything. */
const READER_SLEEP_SECONDS = 1.5;
/** A write that waited for the reader would hold the event loop about this long; half of it is the bound. */
const STALL_BOUND_MS = (READER_SLEEP_SECONDS * 1000) / 2;

interface WriterRun {
  readonly lines: string[];
  readonly report: { written: number; dropped: number; longestDelayMs: number };
}

/** Runs test/support/log-writer.ts with its stdout into a pipe whose reader sleeps first. */
function writeThroughSlowReader(count: number): WriterRun {
  const run = spawnSync(
    'sh',
    ['-c', `"$NODE" --import tsx test/support/log-writer.ts ${count} ${READER_SLEEP_SECONDS * 1000 + 1000} | { sleep ${READER_SLEEP_SECONDS}; cat; }`],
    { cwd: REPO_ROOT, env: { ...process.env, NODE: process.execPath }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  assert.equal(run.status, 0, `the writer failed:\n${run.stderr}`);
  const reportLine = run.stderr.trim().split('\n').pop() ?? '';
  return { lines: run.stdout.split('\n').filter(Boolean), report: JSON.parse(reportLine) };
}

/** Every line parsed; a torn or merged line fails with the line itself. */
function parseAll(lines: string[]): Record<string, unknown>[] {
  return lines.map((line) => {
    try {
      return JSON.parse(line);
    } catch {
      assert.fail(`a log line is not JSON (torn by a partial write?): ${line.slice(0, 120)}...${line.slice(-60)}`);
    }
  });
}

describe('log lines when stdout is read slowly', () => {
  test('a backlog under the limit is delivered whole and in order, and the event loop never waits for the reader', () => {
    // About 290 bytes a line: 2,500 lines are 11 pipes full, well under the backlog limit.
    const count = 2500;
    const { lines, report } = writeThroughSlowReader(count);
    const entries = parseAll(lines);
    assert.deepEqual(
      entries.map((entry) => entry.seq),
      Array.from({ length: count }, (_, i) => i),
      'the admission lines received, by sequence number',
    );
    assert.equal(report.dropped, 0, 'lines dropped');
    assert.ok(report.longestDelayMs < STALL_BOUND_MS, `the event loop was held up ${report.longestDelayMs.toFixed(0)} ms while the reader slept ${READER_SLEEP_SECONDS} s`);
  });

  test('past the backlog limit lines are dropped whole, counted, and reported once the reader catches up', () => {
    const count = 20_000; // about 5.7 MB, over five times the limit
    const { lines, report } = writeThroughSlowReader(count);
    const entries = parseAll(lines);
    const admissions = entries.filter((entry) => entry.msg === 'admission');
    const reports = entries.filter((entry) => entry.msg === 'log lines dropped: stdout was not read fast enough');
    assert.ok(report.dropped > 0, `expected lines dropped past the ${MAX_BACKLOG_BYTES}-byte backlog; none were`);
    assert.equal(admissions.length + report.dropped, count, `${admissions.length} lines received + ${report.dropped} dropped should be the ${count} written`);
    const seqs = admissions.map((entry) => entry.seq as number);
    assert.ok(
      seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]),
      'the lines received are in the order written',
    );
    assert.equal(
      reports.reduce((sum, entry) => sum + (entry.dropped as number), 0),
      report.dropped,
      `the warn lines report every dropped line: ${JSON.stringify(reports)}`,
    );
    assert.ok(reports.every((entry) => entry.level === 'warn'));
    assert.ok(report.longestDelayMs < STALL_BOUND_MS, `the event loop was held up ${report.longestDelayMs.toFixed(0)} ms while the reader slept ${READER_SLEEP_SECONDS} s`);
  });
});

describe('lines formatted later (logLater, the per-admission line)', () => {
  const collect = () => {
    const written: string[] = [];
    return { written, entries: () => written.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>) };
  };

  test('come out in the order they were logged, among immediate lines, with the time they were logged at', () => {
    const out = collect();
    const logger = createLogger('info', (text) => out.written.push(text));
    const before = Date.now();
    logger.logLater('info', 'admission', (fields: { n: number }) => `,"n":${fields.n}`, { n: 1 });
    logger.log('warn', 'immediate', { n: 2 });
    logger.logLater('info', 'admission', (fields: { n: number }) => `,"n":${fields.n}`, { n: 3 });
    const after = Date.now();
    // Formatted at least 60 ms later, by flush(), without yielding to the event loop (whose turn would
    // format them): the calls' time is between `before` and `after`, the write's past `after` + 60.
    const until = after + 60;
    while (Date.now() < until);
    logger.flush();
    const entries = out.entries();
    assert.deepEqual(entries.map((entry) => [entry.msg, entry.n]), [['admission', 1], ['immediate', 2], ['admission', 3]]);
    const lastTime = Date.parse(String(entries[2].time));
    const iso = (ms: number) => new Date(ms).toISOString();
    assert.ok(
      lastTime >= before && lastTime <= after,
      `expected the time of the logLater call (${iso(before)} to ${iso(after)}), not of the write at ${iso(until)} or later; got ${entries[2].time}`,
    );
  });

  test('a line whose formatting throws becomes an error line, and the lines around it are kept', () => {
    const out = collect();
    const logger = createLogger('info', (text) => out.written.push(text));
    logger.logLater('info', 'admission', () => `,"n":1`, undefined);
    logger.logLater('info', 'admission', () => {
      throw new Error('broken formatter');
    }, undefined);
    logger.logLater('info', 'admission', () => `,"n":3`, undefined);
    logger.flush();
    assert.deepEqual(out.entries().map((entry) => [entry.level, entry.msg, entry.n ?? entry.error]), [
      ['info', 'admission', 1],
      ['error', 'could not write a log line', 'broken formatter'],
      ['info', 'admission', 3],
    ]);
  });

  test('below the level nothing is formatted; past MAX_LATER_LINES waiting, they are formatted at once', () => {
    const logger = createLogger('info', () => undefined);
    let formatted = 0;
    const members = () => {
      formatted++;
      return '';
    };
    logger.logLater('debug', 'decisions', members, undefined);
    logger.flush();
    assert.equal(formatted, 0, 'a debug line at level info must not be formatted');
    for (let i = 0; i < MAX_LATER_LINES - 1; i++) logger.logLater('info', 'admission', members, undefined);
    assert.equal(formatted, 0, 'lines below the bound wait for the flush');
    logger.logLater('info', 'admission', members, undefined);
    assert.equal(formatted, MAX_LATER_LINES, 'the line that reaches the bound formats every waiting line');
  });
});
