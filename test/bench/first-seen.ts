// `npx tsx test/bench/first-seen.ts`: the webhook's first-seen path against the baseline, with every
// request a different pod (no review repeats another, so none is answered from repeated-reviews.ts),
// the webhook run as the synthesized Deployment runs it (its env: NODE_OPTIONS, log level). Both
// servers take turns of 100 ms in one closed-loop generator (paired-load.ts, as `npm run bench`'s paired
// rounds), in FIRST_SEEN_ROUNDS rounds of FIRST_SEEN_SECONDS per server; each round prints server CPU
// per request (from /proc/<pid>/stat) and throughput of both, and their ratio.
//
//   FIRST_SEEN_BUNDLE_B=<path>      a second webhook (e.g. build/webhook/server.js copied before a change),
//                                   paired with the baseline in every round too, and then with the first
//                                   webhook directly (A/B in turns: the fairest comparison of two builds)
//   FIRST_SEEN_ENV_A / _B='{...}'   settings over the Deployment's env for either webhook (what-ifs)
//   FIRST_SEEN_PROFILE=<dir>        .cpuprofile of the first webhook and the baseline (not for CPU figures)
//   FIRST_SEEN_CALLGRIND=<warm>,<n> instead of the above: instructions per request under callgrind
//                                   (instruction-counts.ts), <warm> requests uncounted then <n> counted,
//                                   one at a time, of each webhook and the baseline: counts that do not
//                                   move with the machine's load, for an A/B of a change
//
// At the end it waits 3 s and prints each server's RSS (the idle RSS after load of `npm run bench`).
// Writes nothing; bounded by its rounds (about 2 x (3 + SECONDS) s per pairing and round).
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadReview } from '../support/recorded-reviews';
import {
  BUNDLE,
  RunningServer,
  ServerSpec,
  baselineSpec,
  cleanupTemp,
  detectPinning,
  fixedCertificate,
  installCleanup,
  makeTempDir,
  materialize,
  pinSelf,
  readRssKb,
  runLoad,
  runPairedLoad,
  runSynthCommand,
  startServer,
  webhookSpec,
} from './bench-support';
import { countInstructions } from './instruction-counts';
import { HTTP_REVIEW, body } from './reviews';
import { median } from './stats';

const ROUNDS = Number(process.env.FIRST_SEEN_ROUNDS ?? 3);
const SECONDS = Number(process.env.FIRST_SEEN_SECONDS ?? 4);
const BUNDLE_B = process.env.FIRST_SEEN_BUNDLE_B;
const ENV_A: Record<string, string> = JSON.parse(process.env.FIRST_SEEN_ENV_A ?? '{}');
const ENV_B: Record<string, string> = JSON.parse(process.env.FIRST_SEEN_ENV_B ?? '{}');
const PROFILE_DIR = process.env.FIRST_SEEN_PROFILE;
const CALLGRIND = process.env.FIRST_SEEN_CALLGRIND?.split(',').map(Number);
const PHASE_MS = 100;
const CONNECTIONS = 10;

async function main(): Promise<void> {
  installCleanup();
  if (!fs.existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run "npm run bundle" first`);
  const pinning = detectPinning();
  pinSelf(pinning);
  const { certDir } = fixedCertificate();
  const deployed = materialize((await runSynthCommand(certDir, pinning)).files);
  const bodyFile = path.join(makeTempDir('body'), `${HTTP_REVIEW}.json`);
  fs.writeFileSync(bodyFile, body(loadReview(HTTP_REVIEW)));
  process.stderr.write(`webhook env from the Deployment: NODE_OPTIONS=${deployed.env.NODE_OPTIONS ?? ''} INJECTOR_LOG_LEVEL=${deployed.env.INJECTOR_LOG_LEVEL ?? ''}\n`);

  if (CALLGRIND) {
    const [warm, count] = CALLGRIND;
    const sides = [
      ['webhook', await webhookSpec(deployed, [], BUNDLE, 'webhook'), ENV_A],
      ...(BUNDLE_B ? [['webhook B', await webhookSpec(deployed, [], path.resolve(BUNDLE_B), 'webhook B'), ENV_B] as const] : []),
      ['baseline', await baselineSpec(deployed), {}],
    ] as const;
    const counts: Record<string, number> = {};
    for (const [name, spec, env] of sides) {
      const result = await countInstructions({ ...spec, env: { ...spec.env, ...env } }, bodyFile, warm, count, pinning.server, true);
      counts[name] = result.instructions;
      process.stdout.write(
        `${name}: ${result.instructions.toFixed(0)} instructions per request (other threads ${result.otherThreadsInstructions.toFixed(0)}); ` +
          `I1 misses ${result.i1Misses.toFixed(0)}, D1 misses ${(result.d1ReadMisses + result.d1WriteMisses).toFixed(0)}, LL misses ${result.llMisses.toFixed(0)}\n`,
      );
    }
    for (const name of Object.keys(counts)) if (name !== 'baseline') process.stdout.write(`${name}/baseline: ${(counts[name] / counts.baseline).toFixed(3)}x\n`);
    cleanupTemp();
    return;
  }
  const specA = await webhookSpec(deployed, PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}/webhook`] : [], BUNDLE, 'webhook');
  const webhook = await startServer({ ...specA, env: { ...specA.env, INJECTOR_SHUTDOWN_DELAY_SECONDS: '0', ...ENV_A } }, pinning);
  const specBase = await baselineSpec(deployed);
  const baseline = await startServer(PROFILE_DIR ? { ...specBase, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}/baseline`, ...specBase.nodeArgs] } : specBase, pinning);
  let webhookB: RunningServer | undefined;
  let specB: Awaited<ReturnType<typeof webhookSpec>> | undefined;
  if (BUNDLE_B) {
    specB = await webhookSpec(deployed, [], path.resolve(BUNDLE_B), 'webhook B');
    webhookB = await startServer({ ...specB, env: { ...specB.env, ...ENV_B } }, pinning);
  }
  // Pre-warm: V8 grows its heap and optimizes over the first tens of thousands of requests.
  for (const server of [webhook, baseline, ...(webhookB ? [webhookB] : [])]) {
    await runLoad(
      { mode: 'closed', connections: CONNECTIONS, warmupSeconds: 0, durationSeconds: 4, port: server.port, caFile: deployed.caFile, servername: deployed.serverName, bodyFile, uniquePods: true, expectPatch: true },
      pinning,
    );
  }
  const pair = async (a: RunningServer, b: RunningServer) => {
    const result = await runPairedLoad(
      {
        servers: [
          { port: a.port, pid: a.pid },
          { port: b.port, pid: b.pid },
        ],
        caFile: deployed.caFile,
        servername: deployed.serverName,
        bodyFile,
        uniquePods: true,
        connections: CONNECTIONS,
        phaseMs: PHASE_MS,
        phasesPerServer: 2 * Math.max(1, Math.round((SECONDS * 1000) / PHASE_MS / 2)),
        warmupSeconds: 2,
      },
      pinning,
    );
    if (result.badAnswers.length > 0) throw new Error(`bad answers: ${result.badAnswers.join('\n')}`);
    return result.sides;
  };
  const ratios: Record<string, number[]> = {};
  const line = (label: string, sides: Awaited<ReturnType<typeof pair>>) => {
    const [x, y] = sides;
    (ratios[label] ??= []).push(x.cpuUsPerRequest / y.cpuUsPerRequest);
    return (
      `${label}: CPU/request ${x.cpuUsPerRequest.toFixed(1)} vs ${y.cpuUsPerRequest.toFixed(1)} µs = ${(x.cpuUsPerRequest / y.cpuUsPerRequest).toFixed(3)}x; ` +
      `throughput ${x.throughput.toFixed(0)} vs ${y.throughput.toFixed(0)} = ${(x.throughput / y.throughput).toFixed(2)}x`
    );
  };
  for (let round = 1; round <= ROUNDS; round++) {
    const lines = [line('webhook/baseline', await pair(webhook, baseline))];
    if (webhookB) {
      lines.push(line('B/baseline', await pair(webhookB, baseline)));
      lines.push(line('webhook/B', await pair(webhook, webhookB)));
    }
    process.stdout.write(`round ${round}: ${lines.join('; ')}\n`);
  }
  for (const [label, list] of Object.entries(ratios)) process.stdout.write(`median ${label}: ${median(list).toFixed(3)}x (${list.map((r) => r.toFixed(3)).join(', ')})\n`);
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const rss = (server: RunningServer) => `${(readRssKb(server.pid) / 1024).toFixed(1)} MiB`;
  process.stdout.write(`RSS 3 s after the load: webhook ${rss(webhook)}, baseline ${rss(baseline)}${webhookB ? `, B ${rss(webhookB)}` : ''}\n`);
  // Where each webhook's RSS is: file-backed pages (the node binary's, mostly) and anonymous memory,
  // and of the latter what V8's heap spaces hold (from /metrics).
  const measured: [RunningServer, ServerSpec][] = [[webhook, specA]];
  if (webhookB && specB) measured.push([webhookB, specB]);
  for (const [server, spec] of measured) {
    const rollup = fs.readFileSync(`/proc/${server.pid}/smaps_rollup`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? NaN) / 1024;
    const metrics = await new Promise<string>((resolve) => {
      http.get({ host: '127.0.0.1', port: spec.opsPort, path: '/metrics' }, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve(text));
      }).on('error', () => resolve(''));
    });
    const spaces = [...metrics.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\} (\d+)/gm)].map((m) => `${m[1]} ${(Number(m[2]) / 1048576).toFixed(1)}`);
    const used = /^nodejs_heap_size_used_bytes (\d+)/m.exec(metrics)?.[1];
    const external = /^nodejs_external_memory_bytes (\d+)/m.exec(metrics)?.[1];
    process.stdout.write(
      `${server.name}: Rss ${kb('Rss').toFixed(1)} MiB = anonymous ${kb('Anonymous').toFixed(1)} + file-backed ${(kb('Rss') - kb('Anonymous')).toFixed(1)}; ` +
        `V8 heap used ${(Number(used) / 1048576).toFixed(1)} MiB, external ${(Number(external) / 1048576).toFixed(1)} MiB; spaces (MiB, committed): ${spaces.join(', ')}\n`,
    );
  }
  process.stdout.write(`load average now: ${os.loadavg().map((n) => n.toFixed(2)).join(' ')}\n`);
  await webhook.stop('SIGTERM');
  await baseline.stop(PROFILE_DIR ? 'SIGTERM' : 'SIGKILL');
  await webhookB?.stop('SIGKILL');
  cleanupTemp();
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? error}\n`);
  cleanupTemp();
  process.exit(1);
});
