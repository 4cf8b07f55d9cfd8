// What one `npm run bench` measured, as its targets and BENCHMARKS.md read it, and the lookups they share.
import { detectPinning, machine } from './bench-support';
import type { ProfileSummary } from './cpu-profile';
import type { EngineCase, EngineResults } from './engine-bench';
import type { GcStats } from './gc-under-load';
import { CLOSED_CONNECTIONS, LoadRun, RoundResult, Scenario, ServerName } from './https-load-segments';
import type { InstructionCounts } from './instruction-counts';
import type { PairedSide } from './paired-load';
import type { PairedRound } from './saturation-rounds';
import { fmt } from './stats';

export interface Report {
  date: Date;
  host: ReturnType<typeof machine>;
  pinning: ReturnType<typeof detectPinning>;
  loadAverageBefore: number[];
  loadAverageAfter: number[];
  totalSeconds: number;
  engine: EngineResults;
  synthCommandMs: number[];
  synthInProcess: { importMs: number; synthMs: number[] };
  bareNodeMs: number[];
  webhookStarts: { readyMs: number; listeningMs: number }[];
  baselineStarts: number[];
  idleRss: { webhook: number; baseline: number };
  afterLoadRss: { webhook: number; baseline: number };
  runs: LoadRun[];
  /** Per-round figures of the interleaved scenarios. */
  rounds: RoundResult[];
  /** The paired saturation rounds, which the saturation verdicts count. */
  paired: PairedRound[];
  /** Paired rounds with every request a new pod (no repeated reviews: the first-seen path), as many as `paired`. */
  pairedUnique: PairedRound[];
  /** Paired rounds with every request a new ReplicaSet's pod (unnamed, each missing the repeated-review key). */
  pairedNewReplicaSets: PairedRound[];
  /** 500 req/s in paired turns: the webhook against the baseline. */
  paired500: { webhook: PairedSide; baseline: PairedSide };
  /** 500 req/s in paired turns: the baseline against a copy of itself. */
  control500: readonly [PairedSide, PairedSide];
  scenarios: Scenario[];
  bodyBytes: number;
  webhookLogs: { lines: number; warnOrError: number };
  gc: GcStats[];
  profile: ProfileSummary | undefined;
  profiledRun: LoadRun;
  keptProfile: string | undefined;
  /** Main-thread instructions and simulated cache misses per request, or why they were not counted. */
  instructions: { counts: InstructionCounts[]; skipped?: undefined } | { skipped: string; counts?: undefined };
}

export const us = (value: number) => `${fmt(value)} µs`;
export const ms = (value: number) => `${fmt(value)} ms`;
export const CLOSED_KEY = `closed-${CLOSED_CONNECTIONS}`;

export const mb = (kb: number) => kb / 1024;

export function engineCase(engine: EngineResults, name: string, mode: EngineCase['mode']): EngineCase {
  const found = engine.cases.find((c) => c.name === name && c.mode === mode);
  if (!found) throw new Error(`no engine result for ${name}/${mode}`);
  return found;
}

export function run(report: Report, scenario: string, server: ServerName): LoadRun {
  const found = report.runs.find((r) => r.scenario === scenario && r.server === server);
  if (!found) throw new Error(`no load run ${scenario}/${server}`);
  return found;
}

export function gcOf(report: Report, server: ServerName): GcStats {
  return report.gc.find((g) => g.server === server)!;
}

export function countsOf(report: Report, server: ServerName): InstructionCounts | undefined {
  return report.instructions.counts?.find((c) => c.server === server);
}
