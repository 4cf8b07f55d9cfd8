// `npm run bench`: measures the engine in process, the bundled webhook over HTTPS against a bare
// node:https baseline, synth time, start-to-ready time and memory, takes a CPU profile of the webhook
// under saturation, and writes BENCHMARKS.md. Bounded: about 2-3 minutes; every child is killed on exit.
// Each measurement lives in a file named for it: https-load-segments.ts, saturation-rounds.ts,
// p99-turns.ts, gc-under-load.ts, start-to-ready.ts, saturation-profile.ts, instructions-per-request.ts;
// the targets in bench-targets.ts, the markdown in benchmarks-markdown.ts and missed-targets.ts.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { asUnnamed, loadReview } from '../support/recorded-reviews';
import { BUNDLE, REPO_ROOT, RunningServer, ServerSpec, baselineSpec, cleanupTemp, detectPinning, fixedCertificate, installCleanup, machine, makeTempDir, materialize, pinSelf, readRssKb, runSynthCommand, runSynthInProcess, runToEnd, startServer, webhookSpec } from './bench-support';
import { keepClusterSection } from './benchmarks-sections';
import { renderBenchmarks } from './benchmarks-markdown';
import type { Report } from './bench-report';
import { targets } from './bench-targets';
import { began, progress } from './bench-progress';
import type { EngineResults } from './engine-bench';
import { GC_SECONDS, GcStats, gcRun } from './gc-under-load';
import { LOAD_SECONDS, SEGMENTS, ServerName, loadScenarios, prewarm, runScenarios } from './https-load-segments';
import { instructionsPerRequest } from './instructions-per-request';
import { pairedAt500 } from './p99-turns';
import { P99_SAMPLES } from './pool-p99';
import { HTTP_REVIEW, body } from './reviews';
import { PROFILE_SECONDS, profileUnderSaturation } from './saturation-profile';
import { pairedSaturationRounds } from './saturation-rounds';
import { STARTS, bareNodeStarts, baselineStartTimes, webhookStartTimes } from './start-to-ready';

const OUTPUT = path.join(REPO_ROOT, 'BENCHMARKS.md');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  installCleanup();
  if (!fs.existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "npm run bundle" first (npm run bench does)`);
  const date = new Date();
  const host = machine(); // before pinning this process, which narrows what it sees
  const pinning = detectPinning();
  pinSelf(pinning);
  const loadAverageBefore = os.loadavg();
  progress(`machine: ${host.cpu}, ${host.cores} cores, Node ${host.node}; ${pinning.reason}`);

  // ------------------------------------------------------------------ 1. engine, in process
  progress('engine benchmarks (in a child process on the server core)');
  const engineFile = path.join(makeTempDir('engine'), 'engine.json');
  const engineRun = await runToEnd(pinning.server, process.execPath, ['--import', 'tsx', path.join(__dirname, 'engine-bench.ts'), engineFile], {}, 120_000);
  if (engineRun.code !== 0) throw new Error(`engine benchmark failed:\n${engineRun.stderr}`);
  const engine = JSON.parse(fs.readFileSync(engineFile, 'utf8')) as EngineResults;

  // ------------------------------------------------------------------ 5. synth
  progress('synth: node --import tsx app/main.ts x3, and synthDefaultApp timed in process');
  const { certDir } = fixedCertificate();
  const synthCommands = [];
  for (let i = 0; i < 3; i++) synthCommands.push(await runSynthCommand(certDir, pinning));
  const synthInProcess = await runSynthInProcess(certDir, pinning, 5);
  const deployed = materialize(synthCommands[0].files);

  // ------------------------------------------------------------------ start-to-ready
  progress(`start-to-ready: ${STARTS} starts of the webhook, 3 of the baseline, 5 of bare node`);
  const bareNodeMs = await bareNodeStarts(pinning);
  const webhookStarts = await webhookStartTimes(deployed, pinning);
  const warnSpec = await webhookSpec(deployed);
  const specs: Record<ServerName, ServerSpec> = {
    webhook: await webhookSpec(deployed),
    baseline: await baselineSpec(deployed),
    'webhook-warn': { ...warnSpec, name: 'webhook-warn', env: { ...warnSpec.env, INJECTOR_LOG_LEVEL: 'warn' } },
  };
  const baselineStarts = await baselineStartTimes(specs.baseline, pinning);

  // ------------------------------------------------------------------ 2/3/4. HTTPS load
  // The repeated case (every load run but the first-seen rounds): the recorded pod as a ReplicaSet's
  // pod, the same review every time but for the uid. The first-seen rounds: the recorded named pod,
  // a name of its own per request (a new bare pod each time), and the ReplicaSet's pod with a
  // generateName of its own per request (a new ReplicaSet's first pod each time).
  const bodyDir = makeTempDir('body');
  const bodyFile = path.join(bodyDir, `${HTTP_REVIEW}-replicaset.json`);
  fs.writeFileSync(bodyFile, body(asUnnamed(loadReview(HTTP_REVIEW))));
  const namedBodyFile = path.join(bodyDir, `${HTTP_REVIEW}.json`);
  fs.writeFileSync(namedBodyFile, body(loadReview(HTTP_REVIEW)));
  const bodyBytes = fs.statSync(bodyFile).size;
  progress('starting the webhook, the baseline and the webhook at log level warn for the load runs');
  const servers = {} as Record<ServerName, RunningServer>;
  for (const name of ['webhook', 'baseline', 'webhook-warn'] as const) servers[name] = await startServer(specs[name], pinning);
  await sleep(2000);
  const idleRss = { webhook: readRssKb(servers.webhook.pid), baseline: readRssKb(servers.baseline.pid) };
  for (const name of ['webhook', 'baseline', 'webhook-warn'] as const) await prewarm(servers[name], deployed, bodyFile, pinning);

  const segmentSeconds = LOAD_SECONDS / SEGMENTS;
  const scenarios = loadScenarios(segmentSeconds);
  const { runs, rounds } = await runScenarios(scenarios, servers, deployed, bodyFile, pinning);
  const { paired, pairedUnique, pairedNewReplicaSets } = await pairedSaturationRounds(servers, deployed, { bodyFile, namedBodyFile }, segmentSeconds, pinning);
  await sleep(3000);
  const afterLoadRss = { webhook: readRssKb(servers.webhook.pid), baseline: readRssKb(servers.baseline.pid) };

  // 500 req/s in paired turns, and the same for the baseline against a copy of itself (the control).
  progress('starting a second baseline for the same-server control at 500 req/s');
  const baselineCopy = await startServer({ ...(await baselineSpec(deployed)), name: 'baseline copy' }, pinning);
  await prewarm(baselineCopy, deployed, bodyFile, pinning);
  // Each answer's latency is kept in build/bench-samples/ too: the p99 target is judged over three runs'
  // answers pooled (test/bench/pool-p99.ts), beside the same-server control's.
  const [pairedWebhook500, pairedBaseline500] = await pairedAt500(servers.webhook, servers.baseline, deployed, bodyFile, P99_SAMPLES.paired, pinning);
  const control500 = await pairedAt500(servers.baseline, baselineCopy, deployed, bodyFile, P99_SAMPLES.control, pinning);
  await baselineCopy.stop('SIGKILL');
  const webhookLogs = { ...servers.webhook.logs };
  for (const server of Object.values(servers)) await server.stop('SIGKILL');

  // ------------------------------------------------------------------ GC under 500 req/s
  const gc: GcStats[] = [];
  for (const name of ['webhook', 'baseline'] as const) {
    progress(`GC at 500 req/s with --trace-gc-nvp -> ${name} (${GC_SECONDS} s)`);
    gc.push(await gcRun(name, specs[name], deployed, bodyFile, pinning));
  }

  // ------------------------------------------------------------------ CPU profile under saturation
  progress(`CPU profile of the webhook under saturation (--cpu-prof, ${PROFILE_SECONDS} s)`);
  const { profile, profiledRun, keptProfile } = await profileUnderSaturation(deployed, scenarios[scenarios.length - 1], bodyFile, pinning);

  // ------------------------------------------------------------------ instructions under callgrind
  const instructions = await instructionsPerRequest(specs, bodyFile, pinning);

  const loadAverageAfter = os.loadavg();
  const totalSeconds = (performance.now() - began) / 1000;
  const report: Report = {
    date,
    host,
    pinning,
    loadAverageBefore,
    loadAverageAfter,
    totalSeconds,
    engine,
    synthCommandMs: synthCommands.map((synth) => synth.wallMs),
    synthInProcess,
    bareNodeMs,
    webhookStarts,
    baselineStarts,
    idleRss,
    afterLoadRss,
    runs,
    rounds,
    paired,
    pairedUnique,
    pairedNewReplicaSets,
    paired500: { webhook: pairedWebhook500, baseline: pairedBaseline500 },
    control500,
    scenarios,
    bodyBytes,
    webhookLogs,
    gc,
    profile,
    profiledRun,
    keptProfile,
    instructions,
  };
  const markdown = renderBenchmarks(report);
  // The section `npm run bench:cluster` wrote stays: this run measures none of it.
  fs.writeFileSync(OUTPUT, keepClusterSection(markdown, fs.existsSync(OUTPUT) ? fs.readFileSync(OUTPUT, 'utf8') : undefined));
  progress(`wrote ${path.relative(process.cwd(), OUTPUT)} in ${totalSeconds.toFixed(0)} s`);
  process.stdout.write(markdown.slice(markdown.indexOf('## Targets'), markdown.indexOf('## 1.')));
  const verdicts = targets(report);
  process.stdout.write('\n');
  for (const t of verdicts) process.stdout.write(`${t.met ? 'PASS' : 'FAIL'}  ${t.target}: ${t.measured}\n`);
  cleanupTemp();
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`bench failed: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
