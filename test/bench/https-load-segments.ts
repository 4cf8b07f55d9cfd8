// `npm run bench`'s HTTPS load: the webhook and the baseline loaded in turns, in segments of a few seconds
// (open loop at a fixed rate, or closed loop at saturation), each segment's latency, throughput and
// server CPU, a segment that other processes disturbed run again, and the segments merged per server.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RunningServer, coreSnapshot, coreUsage, detectPinning, makeTempDir, readCpuMs, runLoad, sampleRss } from './bench-support';
import { elapsedSeconds, progress } from './bench-progress';
import type { GeneratorConfig, GeneratorErrors, GeneratorResult } from './load-generator';
import { Distribution, distribution, fmt, ratio } from './stats';

/** Measured seconds per server and scenario, split into interleaved segments. */
export const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
export const SEGMENTS = 2;
export const SEGMENT_WARMUP_SECONDS = 1;
export const OPEN_MAX_CONNECTIONS = 64;
/**
 * Open loop: all connections are opened (handshaken) before the schedule starts and the pool never
 * grows. Growing it on demand turned any short stall into a storm of TLS handshakes on the server
 * core (each a 2048-bit RSA signature) that dominated the tail of both servers.
 */
export const OPEN_INITIAL_CONNECTIONS = OPEN_MAX_CONNECTIONS;
export const CLOSED_CONNECTIONS = 10;

/** A segment during which other processes took more than this share of the server's or the generator's core is run again. */
export const QUIET_THRESHOLD_PERCENT = 10;
export const MAX_RETRIES_PER_SEGMENT = 2;
export const MAX_RETRIES_TOTAL = 5;
/** No re-runs once the whole benchmark has taken this long, so it stays within its time budget. */
export const RETRY_DEADLINE_SECONDS = 150;
/** Unmeasured saturation load each server gets before the scenarios: V8 grows its heap and finishes optimizing over the first tens of thousands of requests. */
/** Rounds of the closed-loop scenario, and of each kind of paired saturation round (saturation-rounds.ts). */
export const SATURATION_ROUNDS = 3;
export const PREWARM_SECONDS = 6;

export type ServerName = 'webhook' | 'baseline' | 'webhook-warn';
export const SERVER_LABEL: Record<ServerName, string> = {
  webhook: 'webhook',
  baseline: 'baseline',
  'webhook-warn': 'webhook at log level warn (what-if)',
};

/** One server's figures in one round of a scenario: a single segment. */
export interface RoundResult {
  readonly scenario: string;
  readonly round: number;
  readonly server: ServerName;
  readonly throughput: number;
  readonly cpuUsPerRequest: number;
}

/** One server's figures for one scenario, merged over its interleaved segments. */
export interface LoadRun {
  readonly scenario: string;
  readonly server: ServerName;
  readonly segments: number;
  /** Segments run again because other processes disturbed them. */
  readonly reruns: number;
  /** Kept segments that were still disturbed (re-runs exhausted). */
  readonly disturbed: number;
  readonly latencyUs: Distribution;
  /** Each segment's own p99 latency, in the order run: how far one segment's tail moves from the next. */
  readonly segmentP99Us: number[];
  readonly serviceUs: Distribution;
  readonly sendDelayUs: Distribution;
  readonly throughput: number;
  readonly measured: number;
  readonly errorCount: number;
  readonly errors: GeneratorErrors;
  /** Server CPU per answered request (warm-up included on both sides), µs. */
  readonly cpuUsPerRequest: number;
  /** Server CPU over the segments, percent of one core. */
  readonly serverCpuPercent: number;
  readonly rssPeakKb: number;
  readonly peakConnections: number;
  readonly generatorCpuPercent: number;
  /** Core 0 busy time not accounted for by the server: other processes on the server's core. */
  readonly otherOnServerCorePercent: number;
  /** Core 1 busy time not accounted for by the generator and this process. */
  readonly otherOnGeneratorCorePercent: number;
  readonly stealPercent: number;
}

interface Segment {
  readonly result: GeneratorResult;
  readonly samples: Float64Array;
  readonly cpuMs: number;
  readonly wallMs: number;
  readonly rssPeakKb: number;
  readonly otherPercent: number;
  readonly otherGeneratorCorePercent: number;
  readonly stealPercent: number;
  readonly rerun: boolean;
}

export interface Scenario {
  readonly key: string;
  readonly title: string;
  readonly servers: ServerName[];
  /** Rounds of one segment per server. @default SEGMENTS */
  readonly rounds?: number;
  /** Servers go in the listed order every round (webhook, baseline, webhook, baseline, ...) instead of
   * rotating who goes first. */
  readonly fixedOrder?: boolean;
  readonly config: Omit<GeneratorConfig, 'port' | 'caFile' | 'servername' | 'bodyFile' | 'expectPatch'>;
}

/** The scenarios of the HTTPS load: open loop at 500 and 1,000 req/s, then closed loop at saturation (the webhook at log level warn beside). */
export function loadScenarios(segmentSeconds: number): Scenario[] {
  const open = (rate: number, serverNames: ServerName[]): Scenario => ({
    key: `open-${rate}`,
    title: `open loop, ${rate} req/s`,
    servers: serverNames,
    config: {
      mode: 'open',
      rate,
      connections: OPEN_MAX_CONNECTIONS,
      initialConnections: OPEN_INITIAL_CONNECTIONS,
      warmupSeconds: SEGMENT_WARMUP_SECONDS,
      durationSeconds: segmentSeconds,
    },
  });
  return [
    open(500, ['webhook', 'baseline']),
    open(1000, ['webhook', 'baseline']),
    {
      key: `closed-${CLOSED_CONNECTIONS}`,
      title: `closed loop, ${CLOSED_CONNECTIONS} connections (saturation)`,
      servers: ['webhook', 'baseline', 'webhook-warn'],
      rounds: SATURATION_ROUNDS,
      fixedOrder: true,
      config: { mode: 'closed', connections: CLOSED_CONNECTIONS, warmupSeconds: SEGMENT_WARMUP_SECONDS, durationSeconds: segmentSeconds },
    },
  ];
}

/** Unmeasured closed-loop load, PREWARM_SECONDS long. */
export async function prewarm(server: RunningServer, deployed: { caFile: string; serverName: string }, bodyFile: string, pinning: ReturnType<typeof detectPinning>): Promise<void> {
  progress(`pre-warm ${server.name}: ${PREWARM_SECONDS} s closed loop, not measured`);
  await runLoad(
    {
      mode: 'closed',
      connections: CLOSED_CONNECTIONS,
      warmupSeconds: 0,
      durationSeconds: PREWARM_SECONDS,
      port: server.port,
      caFile: deployed.caFile,
      servername: deployed.serverName,
      bodyFile,
      expectPatch: true,
    },
    pinning,
  );
}

/** Each scenario's rounds, a segment per server and round; a disturbed segment run again while re-runs last. */
export async function runScenarios(
  scenarios: readonly Scenario[],
  servers: Record<ServerName, RunningServer>,
  deployed: { caFile: string; serverName: string },
  bodyFile: string,
  pinning: ReturnType<typeof detectPinning>,
): Promise<{ runs: LoadRun[]; rounds: RoundResult[] }> {
  const segmentSeconds = LOAD_SECONDS / SEGMENTS;
  const runs: LoadRun[] = [];
  const rounds: RoundResult[] = [];
  let retriesLeft = MAX_RETRIES_TOTAL;
  const quiet = (segment: Segment) =>
    !(segment.otherPercent > QUIET_THRESHOLD_PERCENT) && !(segment.otherGeneratorCorePercent > QUIET_THRESHOLD_PERCENT);
  for (const scenario of scenarios) {
    const segments = new Map<ServerName, Segment[]>(scenario.servers.map((name) => [name, []]));
    // Servers take turns in short segments (rotating who goes first), so a burst of other work on
    // this shared machine lands on all of them alike instead of on whoever ran at that moment.
    const roundCount = scenario.rounds ?? SEGMENTS;
    for (let round = 0; round < roundCount; round++) {
      const order = scenario.fixedOrder ? scenario.servers : scenario.servers.map((_, i) => scenario.servers[(i + round) % scenario.servers.length]);
      for (const name of order) {
        progress(`${scenario.title} -> ${name}, round ${round + 1}/${roundCount} (${SEGMENT_WARMUP_SECONDS} s warm-up + ${fmt(segmentSeconds)} s)`);
        let segment = await loadSegment(servers[name], scenario, deployed, bodyFile, pinning);
        for (let retry = 0; retry < MAX_RETRIES_PER_SEGMENT && !quiet(segment) && retriesLeft > 0; retry++) {
          if (elapsedSeconds() > RETRY_DEADLINE_SECONDS) break;
          retriesLeft--;
          progress(
            `  disturbed (other load: server core ${fmt(segment.otherPercent)}%, generator core ${fmt(segment.otherGeneratorCorePercent)}%): running it again`,
          );
          segment = { ...(await loadSegment(servers[name], scenario, deployed, bodyFile, pinning)), rerun: true };
        }
        segments.get(name)!.push(segment);
        rounds.push({
          scenario: scenario.key,
          round,
          server: name,
          throughput: segment.result.throughput,
          cpuUsPerRequest: (segment.cpuMs * 1000) / Math.max(1, segment.result.answeredTotal),
        });
        if (scenario.fixedOrder && name === 'baseline') {
          const webhook = rounds.find((r) => r.scenario === scenario.key && r.round === round && r.server === 'webhook');
          if (webhook) {
            progress(
              `  round ${round + 1}: throughput ${ratio(webhook.throughput, segment.result.throughput)} of the baseline, ` +
                `CPU per request ${ratio(webhook.cpuUsPerRequest, (segment.cpuMs * 1000) / Math.max(1, segment.result.answeredTotal))}`,
            );
          }
        }
      }
    }
    for (const [name, list] of segments) runs.push(mergeSegments(scenario.key, name, list, pinning.enabled, quiet));
  }
  return { runs, rounds };
}

export async function loadSegment(
  server: RunningServer,
  scenario: Scenario,
  deployed: { caFile: string; serverName: string },
  bodyFile: string,
  pinning: ReturnType<typeof detectPinning>,
): Promise<Segment> {
  const samplesFile = path.join(makeTempDir('samples'), 'samples.bin');
  const rss = sampleRss(server.pid, 500);
  const cpuBefore = readCpuMs(server.pid);
  const selfBefore = process.cpuUsage();
  const coresBefore = coreSnapshot();
  const result = await runLoad(
    { ...scenario.config, port: server.port, caFile: deployed.caFile, servername: deployed.serverName, bodyFile, expectPatch: true, samplesFile },
    pinning,
  );
  const coresAfter = coreSnapshot();
  const self = process.cpuUsage(selfBefore);
  const cpuMs = readCpuMs(server.pid) - cpuBefore;
  const rssSamples = rss.stop();
  const wallMs = coresAfter.at - coresBefore.at;
  const [core0, core1] = coreUsage(coresBefore, coresAfter);
  const raw = fs.readFileSync(samplesFile);
  const samples = new Float64Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  return {
    result,
    samples,
    cpuMs,
    wallMs,
    rssPeakKb: Math.max(...rssSamples),
    otherPercent: core0 ? Math.max(0, core0.busyPercent - (cpuMs / wallMs) * 100) : NaN,
    otherGeneratorCorePercent: core1 ? Math.max(0, core1.busyPercent - ((result.cpuTotalMs + (self.user + self.system) / 1000) / wallMs) * 100) : NaN,
    stealPercent: core0?.stealPercent ?? NaN,
    rerun: false,
  };
}

export function mergeSegments(scenario: string, server: ServerName, segments: Segment[], pinned: boolean, quiet: (segment: Segment) => boolean): LoadRun {
  const count = segments.reduce((sum, s) => sum + s.samples.length / 3, 0);
  const latency = new Float64Array(count);
  const service = new Float64Array(count);
  const sendDelay = new Float64Array(count);
  let at = 0;
  for (const segment of segments) {
    for (let i = 0; i < segment.samples.length; i += 3) {
      latency[at] = segment.samples[i + 1];
      service[at] = segment.samples[i + 2];
      sendDelay[at] = segment.samples[i + 1] - segment.samples[i + 2];
      at++;
    }
  }
  const errors: GeneratorErrors = { status: 0, badResponse: 0, socket: 0, timeout: 0, connect: 0, notSent: 0 };
  for (const segment of segments) for (const key of Object.keys(errors) as (keyof GeneratorErrors)[]) errors[key] += segment.result.errors[key];
  const sum = (pick: (s: Segment) => number) => segments.reduce((total, s) => total + pick(s), 0);
  const wall = sum((s) => s.wallMs);
  return {
    scenario,
    server,
    segments: segments.length,
    reruns: segments.filter((s) => s.rerun).length,
    disturbed: pinned ? segments.filter((s) => !quiet(s)).length : 0,
    latencyUs: distribution(latency),
    segmentP99Us: segments.map((segment) => distribution(segment.samples.filter((_, i) => i % 3 === 1)).p99),
    serviceUs: distribution(service),
    sendDelayUs: distribution(sendDelay),
    // Answers over measured time, each segment's time being ok / its throughput.
    throughput: sum((s) => s.result.ok) / sum((s) => (s.result.throughput > 0 ? s.result.ok / s.result.throughput : 0)),
    measured: sum((s) => s.result.measured),
    errorCount: sum((s) => s.result.errorCount),
    errors,
    cpuUsPerRequest: (sum((s) => s.cpuMs) * 1000) / Math.max(1, sum((s) => s.result.answeredTotal)),
    serverCpuPercent: (sum((s) => s.cpuMs) / wall) * 100,
    rssPeakKb: Math.max(...segments.map((s) => s.rssPeakKb)),
    peakConnections: Math.max(...segments.map((s) => s.result.peakConnections)),
    generatorCpuPercent: sum((s) => s.result.generatorCpuPercent) / segments.length,
    otherOnServerCorePercent: pinned ? sum((s) => s.otherPercent * s.wallMs) / wall : NaN,
    otherOnGeneratorCorePercent: pinned ? sum((s) => s.otherGeneratorCorePercent * s.wallMs) / wall : NaN,
    stealPercent: sum((s) => s.stealPercent * s.wallMs) / wall,
  };
}
