// `npm run soak` (not in CI): the bundled webhook, started as `npm run webhook` starts it, under a
// steady 500 req/s for SOAK_SECONDS (default 600), its RSS sampled every 10 s. Fails (exit 1) when RSS
// grows by 10% or more from the first sample after warm-up to the last, or when any request fails.
//
// V8 grows its heap in steps during the first tens of seconds under load (about 50 -> 105 MiB here), so
// the warm-up runs the same load in 10 s chunks until RSS has stayed within 1% for 20 s (at most
// SOAK_WARMUP_MAX_SECONDS, default 180). A leak cannot hide in that: it keeps RSS moving, and whatever
// it adds after the warm-up counts as growth.
//   SOAK_SECONDS=30 npm run soak     # a quick check (the warm-up still takes 30-60 s)
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadReview } from '../support/recorded-reviews';
import {
  REPO_ROOT,
  BUNDLE,
  detectPinning,
  fixedCertificate,
  installCleanup,
  machine,
  makeTempDir,
  materialize,
  pinSelf,
  readCpuMs,
  readRssKb,
  runLoad,
  runSynthCommand,
  startServer,
  webhookSpec,
} from './bench-support';
import type { GeneratorResult } from './load-generator';
import { HTTP_REVIEW, body } from './reviews';
import { fmt, table } from './stats';

const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const RATE = Number(process.env.SOAK_RATE ?? 500);
const SAMPLE_EVERY_MS = 10_000;
const WARMUP_CHUNK_SECONDS = 10;
const WARMUP_MAX_SECONDS = Number(process.env.SOAK_WARMUP_MAX_SECONDS ?? 180);
const SETTLED_WITHIN = 0.01;
const MAX_GROWTH = 0.1;

const began = performance.now();
const progress = (message: string) => process.stderr.write(`[soak ${((performance.now() - began) / 1000).toFixed(0).padStart(5)} s] ${message}\n`);

async function main(): Promise<number> {
  if (!Number.isFinite(SOAK_SECONDS) || SOAK_SECONDS < 10 || SOAK_SECONDS > 24 * 3600) throw new Error(`SOAK_SECONDS must be 10 to 86400, got ${process.env.SOAK_SECONDS}`);
  if (!Number.isFinite(RATE) || RATE <= 0 || RATE > 5000) throw new Error(`SOAK_RATE must be 1 to 5000, got ${process.env.SOAK_RATE}`);
  if (!Number.isFinite(WARMUP_MAX_SECONDS) || WARMUP_MAX_SECONDS < 10 || WARMUP_MAX_SECONDS > 3600) throw new Error(`SOAK_WARMUP_MAX_SECONDS must be 10 to 3600`);
  installCleanup();
  if (!fs.existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "npm run bundle" first (npm run soak does)`);
  const host = machine();
  const pinning = detectPinning();
  pinSelf(pinning);
  progress(`${host.cpu}, ${host.cores} cores, Node ${host.node}; ${pinning.reason}`);

  const { certDir } = fixedCertificate();
  const synth = await runSynthCommand(certDir, pinning);
  const deployed = materialize(synth.files);
  const bodyFile = path.join(makeTempDir('body'), `${HTTP_REVIEW}.json`);
  fs.writeFileSync(bodyFile, body(loadReview(HTTP_REVIEW)));
  const server = await startServer(await webhookSpec(deployed), pinning);
  progress(`webhook ready after ${fmt(server.readyMs)} ms (pid ${server.pid}, RSS ${fmt(readRssKb(server.pid) / 1024)} MiB)`);

  const load = (seconds: number, warmupSeconds: number): Promise<GeneratorResult> =>
    runLoad(
      {
        mode: 'open',
        rate: RATE,
        connections: 64,
        initialConnections: 64,
        warmupSeconds,
        durationSeconds: seconds,
        port: server.port,
        caFile: deployed.caFile,
        servername: deployed.serverName,
        bodyFile,
        expectPatch: true,
      },
      pinning,
    );

  progress(`warm-up at ${RATE} req/s until RSS is flat (within ${SETTLED_WITHIN * 100}% for 20 s), at most ${WARMUP_MAX_SECONDS} s`);
  const warmupRss: number[] = [];
  let warmupErrors = 0;
  let settled = false;
  for (let elapsed = 0; elapsed < WARMUP_MAX_SECONDS && !settled; elapsed += WARMUP_CHUNK_SECONDS) {
    warmupErrors += (await load(WARMUP_CHUNK_SECONDS, elapsed === 0 ? 1 : 0)).errorCount;
    warmupRss.push(readRssKb(server.pid));
    const recent = warmupRss.slice(-3);
    settled = recent.length === 3 && Math.max(...recent) / Math.min(...recent) - 1 < SETTLED_WITHIN;
    progress(`warm-up t=${elapsed + WARMUP_CHUNK_SECONDS} s RSS ${fmt(warmupRss[warmupRss.length - 1] / 1024)} MiB${settled ? ': settled' : ''}`);
  }
  const warmupSeconds = warmupRss.length * WARMUP_CHUNK_SECONDS;

  progress(`soak: ${SOAK_SECONDS} s at ${RATE} req/s, RSS every ${SAMPLE_EVERY_MS / 1000} s`);
  const samples: { seconds: number; rssKb: number; cpuMs: number }[] = [];
  const soakStart = performance.now();
  const sample = () => {
    const entry = { seconds: (performance.now() - soakStart) / 1000, rssKb: readRssKb(server.pid), cpuMs: readCpuMs(server.pid) };
    samples.push(entry);
    if (samples.length > 1) progress(`t=${Math.round(entry.seconds)} s RSS ${fmt(entry.rssKb / 1024)} MiB`);
  };
  sample();
  const timer = setInterval(sample, SAMPLE_EVERY_MS);
  let result: GeneratorResult;
  try {
    result = await load(SOAK_SECONDS, 0);
  } finally {
    clearInterval(timer);
  }
  sample();
  const alive = server.child.exitCode === null && server.child.signalCode === null;
  const logs = server.logs;
  await server.stop();

  const valid = samples.filter((s) => Number.isFinite(s.rssKb));
  const first = valid[0];
  const last = valid[valid.length - 1];
  const peak = Math.max(...valid.map((s) => s.rssKb));
  const growth = (last.rssKb - first.rssKb) / first.rssKb;
  // Least-squares slope of RSS over time, for the trend (not the pass/fail criterion).
  const n = valid.length;
  const mx = valid.reduce((a, s) => a + s.seconds, 0) / n;
  const my = valid.reduce((a, s) => a + s.rssKb, 0) / n;
  const slopeKbPerSecond = valid.reduce((a, s) => a + (s.seconds - mx) * (s.rssKb - my), 0) / Math.max(1e-9, valid.reduce((a, s) => a + (s.seconds - mx) ** 2, 0));
  const errors = result.errorCount + warmupErrors + (alive ? 0 : 1);
  const growthOk = growth < MAX_GROWTH;
  const errorsOk = errors === 0;

  const report = [
      `# Soak: ${SOAK_SECONDS} s at ${RATE} req/s against build/webhook/server.js`,
      '',
      `Run on ${new Date().toISOString()} with \`npm run soak\` (Node ${process.version}).`,
      '',
      table(
        ['Check', 'Measured', 'Limit', 'Pass'],
        [
          [
            `RSS growth, first sample after warm-up (${warmupSeconds} s, ${settled ? 'settled' : 'did NOT settle'}) to last`,
            `${(growth * 100).toFixed(1)}% (${fmt(first.rssKb / 1024)} -> ${fmt(last.rssKb / 1024)} MiB; peak ${fmt(peak / 1024)} MiB; trend ${fmt((slopeKbPerSecond * 60) / 1024, 2)} MiB/min)`,
            `< ${MAX_GROWTH * 100}%`,
            growthOk ? 'yes' : '**no**',
          ],
          [
            'Errors',
            `${errors} (soak ${JSON.stringify(result.errors)}, warm-up ${warmupErrors}, server ${alive ? 'alive' : 'EXITED'})`,
            '0',
            errorsOk ? 'yes' : '**no**',
          ],
        ],
      ),
      '',
      table(
        ['Latency (µs, from scheduled send)', 'p50', 'p90', 'p99', 'p99.9', 'max', 'Answered', 'Throughput (req/s)', 'Server CPU/request (µs)'],
        [
          [
            'soak',
            fmt(result.latencyUs.p50),
            fmt(result.latencyUs.p90),
            fmt(result.latencyUs.p99),
            fmt(result.latencyUs.p999),
            fmt(result.latencyUs.max),
            result.ok.toLocaleString('en-US'),
            fmt(result.throughput),
            fmt(((last.cpuMs - first.cpuMs) * 1000) / Math.max(1, result.answeredTotal)),
          ],
        ],
      ),
      '',
      `RSS during the warm-up (every ${WARMUP_CHUNK_SECONDS} s): ${warmupRss.map((kb) => fmt(kb / 1024)).join(', ')} MiB.`,
      '',
      table(['t (s)', 'RSS (MiB)'], valid.map((s) => [String(Math.round(s.seconds)), fmt(s.rssKb / 1024)])),
      '',
      `Server log lines: ${logs.lines.toLocaleString('en-US')}, ${logs.warnOrError} at warn or error.`,
      '',
      ...(result.badAnswers.length > 0 ? ['Failed answers (the first few, as received):', '', ...result.badAnswers.map((answer) => `- ${answer}`), ''] : []),
      growthOk && errorsOk ? 'PASS' : 'FAIL',
      '',
    ].join('\n');
  process.stdout.write(report);
  // The full ten-minute soak is kept next to BENCHMARKS.md; a shorter check only prints.
  if (SOAK_SECONDS >= 600) fs.writeFileSync(path.join(REPO_ROOT, 'SOAK.md'), report);
  return growthOk && errorsOk ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`soak failed: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(2);
  },
);
