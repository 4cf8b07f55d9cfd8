// `npm run bench`'s saturation verdicts: the webhook and the baseline loaded by one generator in turns of
// 100 ms (test/bench/paired-load.ts), in rounds of three kinds of request: repeated reviews, every request
// a new bare pod (the first-seen path), every request a new ReplicaSet's first pod.
import { RunningServer, detectPinning, runPairedLoad } from './bench-support';
import { progress } from './bench-progress';
import { CLOSED_CONNECTIONS, SATURATION_ROUNDS } from './https-load-segments';
import type { PairedSide } from './paired-load';
import { fmt, ratio } from './stats';

/** One round of the paired saturation run: the webhook and the baseline loaded in turns of PAIRED_PHASE_MS. */
export interface PairedRound {
  readonly round: number;
  readonly webhook: PairedSide;
  readonly baseline: PairedSide;
}
/** Phase length of the paired saturation run: shorter than the seconds over which this machine's speed moves. */
export const PAIRED_PHASE_MS = 100;
/** Turns not counted before each paired round: with 1 s, the first round of four runs was always the webhook's best (CPU 0.83x to 0.95x against 0.91x to 0.99x after it). */
export const PAIRED_WARMUP_SECONDS = 3;

/** The paired rounds of each kind, SATURATION_ROUNDS of each, the kinds in turn. */
export interface SaturationRounds {
  /** Repeated reviews (a ReplicaSet's pods): the saturation verdicts. */
  readonly paired: PairedRound[];
  /** Every request a new bare pod: the first-seen verdict. */
  readonly pairedUnique: PairedRound[];
  /** Every request a new ReplicaSet's first pod: measured, no target. */
  readonly pairedNewReplicaSets: PairedRound[];
}

export async function pairedSaturationRounds(
  servers: { webhook: RunningServer; baseline: RunningServer },
  deployed: { caFile: string; serverName: string },
  bodies: { bodyFile: string; namedBodyFile: string },
  segmentSeconds: number,
  pinning: ReturnType<typeof detectPinning>,
): Promise<SaturationRounds> {
  const { bodyFile, namedBodyFile } = bodies;
  // Saturation verdicts: both servers in one generator, in turns of PAIRED_PHASE_MS (A B B A ...), so a
  // speed change of the machine lasting seconds lands on both alike (test/bench/paired-load.ts).
  const paired: PairedRound[] = [];
  // Rounds of three kinds in turn: the repeated reviews (a ReplicaSet's pods; the saturation verdicts),
  // then every request a new bare pod (a name of its own: no review repeats another, and a named
  // object's review is never looked up, so each is answered the long way: the first-seen path, with a
  // verdict of its own, issue 49), then every request a new ReplicaSet's first pod (a generateName of
  // its own: each is looked up by its key, missed and answered the long way; measured, no target). The
  // kinds alternate, so a slow spell of the machine lands on all of them.
  const pairedUnique: PairedRound[] = [];
  const pairedNewReplicaSets: PairedRound[] = [];
  const kinds = [
    { label: 'repeated reviews', rounds: paired, bodyFile, uniquePods: false },
    { label: 'every request a new bare pod', rounds: pairedUnique, bodyFile: namedBodyFile, uniquePods: true },
    { label: "every request a new ReplicaSet's pod", rounds: pairedNewReplicaSets, bodyFile, uniquePods: true },
  ];
  for (let turn = 0; turn < kinds.length * SATURATION_ROUNDS; turn++) {
    const kind = kinds[turn % kinds.length];
    const round = Math.floor(turn / kinds.length);
    progress(
      `saturation, paired: webhook and baseline in turns of ${PAIRED_PHASE_MS} ms, ${kind.label}, round ${round + 1}/${SATURATION_ROUNDS} ` +
        `(${PAIRED_WARMUP_SECONDS} s warm-up + ${fmt(segmentSeconds)} s per server)`,
    );
    const result = await runPairedLoad(
      {
        servers: [
          { port: servers.webhook.port, pid: servers.webhook.pid },
          { port: servers.baseline.port, pid: servers.baseline.pid },
        ],
        caFile: deployed.caFile,
        servername: deployed.serverName,
        bodyFile: kind.bodyFile,
        uniquePods: kind.uniquePods,
        connections: CLOSED_CONNECTIONS,
        phaseMs: PAIRED_PHASE_MS,
        phasesPerServer: 2 * Math.max(1, Math.round((segmentSeconds * 1000) / PAIRED_PHASE_MS / 2)),
        warmupSeconds: PAIRED_WARMUP_SECONDS,
      },
      pinning,
    );
    const [webhook, baseline] = result.sides;
    kind.rounds.push({ round, webhook, baseline });
    progress(`  ${kind.label}, round ${round + 1}: throughput ${ratio(webhook.throughput, baseline.throughput)} of the baseline, CPU per request ${ratio(webhook.cpuUsPerRequest, baseline.cpuUsPerRequest)}`);
  }
  return { paired, pairedUnique, pairedNewReplicaSets };
}
