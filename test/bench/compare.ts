// `npm run bench:compare`: a quick webhook-vs-baseline comparison at saturation while working on the
// server's hot path: server CPU time per request and throughput in interleaved closed-loop rounds,
// and bytes allocated per request (from --trace-gc-nvp). Much shorter than `npm run bench`; writes
// nothing. COMPARE_ROUNDS (default 3) and COMPARE_SECONDS (default 4) per round;
// COMPARE_PROFILE=<dir> also writes .cpuprofiles of both servers under saturation to <dir>/webhook and
// <dir>/baseline (summarize them with test/bench/cpu-profile.ts). COMPARE_WEBHOOK_ENV='{"INJECTOR_LOG_LEVEL":"warn"}'
// starts the compared webhook with those settings over the Deployment's (what-ifs without a code change);
// COMPARE_WEBHOOK_NODE_ARGS='--min-semi-space-size=16' passes flags to its node. COMPARE_BUNDLE_B=<path>
// adds a second webhook, that bundle (e.g. build/webhook/server.js copied before a change), to every
// round: an A/B of a change, each side against the same baseline rounds. COMPARE_BUNDLE_A=<path> replaces
// the first webhook's bundle; COMPARE_LEGACY=A|B|AB marks a side built before the ops port.
// COMPARE_RATE=500 compares at that fixed rate instead of at saturation: each webhook and the baseline
// take turns of 1 s (COMPARE_PHASES turns each, default 30) in one open-loop generator
// (test/bench/paired-load.ts), with each turn's main-thread CPU per request and latencies. At low load
// every request meets cold caches, so what the server touches per request shows there more than at
// saturation; and the turns put the host's slow seconds on both servers alike. COMPARE_UNIQUE_PODS=1
// sends every request as a different pod, so no review repeats another and the webhook parses and
// evaluates each (webhook/server/repeated-reviews.ts).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadReview } from '../support/recorded-reviews';
import {
  BUNDLE,
  baselineSpec,
  cleanupTemp,
  detectPinning,
  fixedCertificate,
  installCleanup,
  makeTempDir,
  materialize,
  pinSelf,
  readCpuMs,
  runLoad,
  runSynthCommand,
  runTurnsAtRate,
  startServer,
  webhookSpec,
} from './bench-support';
import { cpuMsOfStat } from './proc-cpu';
import type { PairedResult } from './paired-load';
import { HTTP_REVIEW, body } from './reviews';
import { distribution, median } from './stats';

const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? 3);
const SECONDS = Number(process.env.COMPARE_SECONDS ?? 4);
const CONNECTIONS = 10;
const PROFILE_DIR = process.env.COMPARE_PROFILE;
/** Settings over the Deployment's for the compared webhook, for what-ifs without a code change. */
const WEBHOOK_ENV: Record<string, string> = JSON.parse(process.env.COMPARE_WEBHOOK_ENV ?? '{}');
/** Flags before the compared webhook's script, for V8 flags NODE_OPTIONS does not take (space-separated). */
const WEBHOOK_NODE_ARGS = (process.env.COMPARE_WEBHOOK_NODE_ARGS ?? '').split(' ').filter(Boolean);
const BUNDLE_B = process.env.COMPARE_BUNDLE_B;
/** The first webhook's bundle (default: the one just built), for an A/B of two earlier builds. */
const BUNDLE_A = process.env.COMPARE_BUNDLE_A;
/** Bundles from before the ops port (readiness over HTTPS on the webhook port): COMPARE_LEGACY=A, B or AB. */
const LEGACY = process.env.COMPARE_LEGACY ?? '';
/** Requests per second of the low-load comparison; saturation when unset. */
const RATE = process.env.COMPARE_RATE === undefined ? undefined : Number(process.env.COMPARE_RATE);
/** Turns per server at RATE: even (A B B A). */
const PHASES = 2 * Math.max(1, Math.round(Number(process.env.COMPARE_PHASES ?? 30) / 2));
const UNIQUE_PODS = process.env.COMPARE_UNIQUE_PODS === '1';

/** One line of the low-load comparison: a webhook against the baseline it took turns with. */
function lowLoadLine(name: string, result: PairedResult): string {
  const [w, b] = result.sides;
  const x = (a: number, c: number) => `${(a / c).toFixed(2)}x`;
  const cpu = (side: typeof w) => median(side.phaseMainCpuUs ?? []);
  const all = (side: typeof w) => side.latencyUs ?? distribution([]);
  const turnP99 = (side: typeof w) => median(side.phaseP99Us ?? []);
  return (
    `${name} vs baseline at ${RATE} req/s, ${PHASES} turns of 1 s each: main-thread CPU per request (median of the turns) ` +
    `${cpu(w).toFixed(0)} vs ${cpu(b).toFixed(0)} µs = ${x(cpu(w), cpu(b))}; p50 ${all(w).p50.toFixed(0)} vs ${all(b).p50.toFixed(0)} µs = ${x(all(w).p50, all(b).p50)}; ` +
    `p99 ${all(w).p99.toFixed(0)} vs ${all(b).p99.toFixed(0)} µs = ${x(all(w).p99, all(b).p99)} (median of the turns' p99: ${turnP99(w).toFixed(0)} vs ${turnP99(b).toFixed(0)} µs); ` +
    `errors ${w.errors} and ${b.errors}`
  );
}

/** CPU time of a process's main thread (JavaScript runs there; GC helpers and the like do not), ms. */
function mainThreadCpuMs(pid: number): number {
  return cpuMsOfStat(`/proc/${pid}/task/${pid}/stat`);
}

async function main(): Promise<void> {
  installCleanup();
  if (!fs.existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "npm run bundle" first`);
  const pinning = detectPinning();
  pinSelf(pinning);
  const { certDir } = fixedCertificate();
  const deployed = materialize((await runSynthCommand(certDir, pinning)).files);
  const bodyFile = path.join(makeTempDir('body'), `${HTTP_REVIEW}.json`);
  fs.writeFileSync(bodyFile, body(loadReview(HTTP_REVIEW)));
  const load = (port: number, mode: 'open' | 'closed', seconds: number, warmupSeconds = 1) =>
    runLoad(
      {
        mode,
        ...(mode === 'open' ? { rate: 500, connections: 64, initialConnections: 64 } : { connections: CONNECTIONS }),
        warmupSeconds,
        durationSeconds: seconds,
        port,
        caFile: deployed.caFile,
        servername: deployed.serverName,
        bodyFile,
        uniquePods: UNIQUE_PODS,
        expectPatch: true,
      },
      pinning,
    );

  // Allocation per request: fresh servers with --trace-gc-nvp at 500 req/s.
  const allocation: Record<string, number> = {};
  for (const [name, spec] of [
    ['webhook', await webhookSpec(deployed)],
    ['baseline', await baselineSpec(deployed)],
  ] as const) {
    let allocated = 0;
    let collecting = false;
    const server = await startServer(
      {
        ...spec,
        nodeArgs: ['--trace-gc-nvp', ...spec.nodeArgs],
        onLine: (line) => {
          const a = Number(/\ballocated=(\d+)/.exec(line)?.[1] ?? NaN);
          if (collecting && Number.isFinite(a) && a < 1e12) allocated += a;
        },
      },
      pinning,
    );
    collecting = true;
    const result = await load(server.port, 'open', 4);
    collecting = false;
    await server.stop('SIGKILL');
    allocation[name] = allocated / Math.max(1, result.answeredTotal);
  }

  const legacy = (spec: Awaited<ReturnType<typeof webhookSpec>>, side: string) => (LEGACY.includes(side) ? { ...spec, opsPort: undefined } : spec);
  const webhookBase = legacy(
    await webhookSpec(deployed, [...WEBHOOK_NODE_ARGS, ...(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}/webhook`] : [])], BUNDLE_A ? path.resolve(BUNDLE_A) : undefined),
    'A',
  );
  const webhook = await startServer({ ...webhookBase, env: { ...webhookBase.env, ...WEBHOOK_ENV } }, pinning);
  const baselineBase = await baselineSpec(deployed);
  const baseline = await startServer(PROFILE_DIR ? { ...baselineBase, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}/baseline`, ...baselineBase.nodeArgs] } : baselineBase, pinning);
  const webhookB = BUNDLE_B ? await startServer(legacy(await webhookSpec(deployed, [], path.resolve(BUNDLE_B), 'webhook B'), 'B'), pinning) : undefined;
  const servers = webhookB ? [webhook, webhookB, baseline] : [webhook, baseline];
  const answered: Record<string, number> = { webhook: 0, 'webhook B': 0, baseline: 0 };
  for (const server of servers) answered[server.name] += (await load(server.port, 'closed', 4, 0)).answeredTotal;
  const lines: string[] = [];
  if (RATE !== undefined) {
    for (const side of webhookB ? [webhook, webhookB] : [webhook]) {
      const result = await runTurnsAtRate([side, baseline], deployed, bodyFile, { rate: RATE, turnsPerServer: PHASES, uniquePods: UNIQUE_PODS }, pinning);
      answered[side.name] += result.sides[0].answers;
      answered.baseline += result.sides[1].answers;
      lines.push(lowLoadLine(side.name, result));
      process.stderr.write(lines[lines.length - 1] + '\n');
    }
  } else {
    for (let round = 1; round <= ROUNDS; round++) {
      const measured: Record<string, { throughput: number; cpuUs: number; mainUs: number }> = {};
      // Who goes first rotates, so neither webhook always follows the baseline.
      for (const server of round % 2 === 0 ? [...servers].reverse() : servers) {
        const before = readCpuMs(server.pid);
        const mainBefore = mainThreadCpuMs(server.pid);
        const result = await load(server.port, 'closed', SECONDS);
        const cpuMs = readCpuMs(server.pid) - before;
        const mainMs = mainThreadCpuMs(server.pid) - mainBefore;
        answered[server.name] += result.answeredTotal;
        const count = Math.max(1, result.answeredTotal);
        measured[server.name] = { throughput: result.throughput, cpuUs: (cpuMs * 1000) / count, mainUs: (mainMs * 1000) / count };
      }
      const w = measured.webhook;
      const b = measured.baseline;
      lines.push(
        `round ${round}: throughput ${w.throughput.toFixed(0)} vs ${b.throughput.toFixed(0)} req/s = ${(w.throughput / b.throughput).toFixed(2)}x; ` +
          `CPU/request ${w.cpuUs.toFixed(1)} vs ${b.cpuUs.toFixed(1)} µs = ${(w.cpuUs / b.cpuUs).toFixed(2)}x ` +
          `(main thread ${w.mainUs.toFixed(1)} vs ${b.mainUs.toFixed(1)} µs = ${(w.mainUs / b.mainUs).toFixed(2)}x)` +
          (webhookB
            ? `; B: ${measured['webhook B'].throughput.toFixed(0)} req/s = ${(measured['webhook B'].throughput / b.throughput).toFixed(2)}x, ` +
              `CPU/request ${measured['webhook B'].cpuUs.toFixed(1)} µs = ${(measured['webhook B'].cpuUs / b.cpuUs).toFixed(2)}x, A/B ${(w.cpuUs / measured['webhook B'].cpuUs).toFixed(3)}`
            : ''),
      );
      process.stderr.write(lines[lines.length - 1] + '\n');
    }
  }
  await webhook.stop('SIGTERM');
  await webhookB?.stop('SIGKILL');
  await baseline.stop(PROFILE_DIR ? 'SIGTERM' : 'SIGKILL');
  process.stdout.write(
    [
      ...lines,
      `requests answered by the servers compared (for per-request figures from a profile): webhook ${answered.webhook}, baseline ${answered.baseline}` +
        (webhookB ? `, webhook B ${answered['webhook B']}` : ''),
      `allocated per request at 500 req/s: ${(allocation.webhook / 1024).toFixed(1)} vs ${(allocation.baseline / 1024).toFixed(1)} KiB`,
      `load average now: ${os.loadavg().map((n) => n.toFixed(2)).join(' ')}`,
    ].join('\n') + '\n',
  );
  cleanupTemp();
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? error}\n`);
  cleanupTemp();
  process.exit(1);
});
