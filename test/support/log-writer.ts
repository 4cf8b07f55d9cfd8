// A child process for test/server/logger.test.ts: writes `count` numbered, admission-sized lines through the
// stdout logger as fast as the event loop allows, waits `waitMs` for a slow reader to catch up, flushes
// as the server does at exit, and reports on stderr: lines written, lines the logger dropped, and the
// longest the event loop was held up meanwhile.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createLogger } from '../../webhook/server/logger';

const count = Number(process.argv[2]);
const waitMs = Number(process.argv[3]);
const logger = createLogger('info');
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const padding = 'x'.repeat(200);
let next = 0;

function batch(): void {
  for (let i = 0; i < 100 && next < count; i++, next++) logger.logMembers('info', 'admission', `,"seq":${next},"padding":"${padding}"`);
  if (next < count) setImmediate(batch);
  else setTimeout(finish, waitMs);
}

function finish(): void {
  delay.disable();
  logger.flush();
  process.stderr.write(JSON.stringify({ written: count, dropped: logger.droppedLines, longestDelayMs: delay.max / 1e6 }) + '\n');
}

batch();
