// `npm run bench`'s p99 at 500 requests/s in paired turns of 1 s (one generator keeping its connections),
// the webhook against the baseline and the baseline against a copy of itself, every answer's latency
// kept in build/bench-samples/ for pooling three runs (test/bench/pool-p99.ts).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { REPO_ROOT, RunningServer, TURN_WARMUP_SECONDS, detectPinning, runTurnsAtRate } from './bench-support';
import { progress } from './bench-progress';
import type { PairedSide } from './paired-load';
import { SAMPLES_SUBDIR } from './pool-p99';
import { ratio } from './stats';

/** Where the 500 req/s turns' latencies are written (each side's, µs), for pooling runs (pool-p99.ts). */
const SAMPLES_DIR = path.join(REPO_ROOT, SAMPLES_SUBDIR);

/**
 * 500 req/s again, in turns of 1 s in one generator that keeps its connections (paired-load.ts), and
 * the same for two copies of the baseline: how far two identical servers' p99s land apart on this
 * machine, printed beside the webhook's ratio. Measured, not a verdict: the verdict stays on the
 * segments above, as the target was set.
 */
export const P99_PAIRED_TURNS = 30;

/** 500 req/s in P99_PAIRED_TURNS turns of 1 s per server, `a` and `b` in one generator; each answer's latency written to SAMPLES_DIR/`samples`. */
export async function pairedAt500(
  a: RunningServer,
  b: RunningServer,
  deployed: { caFile: string; serverName: string },
  bodyFile: string,
  samples: string,
  pinning: ReturnType<typeof detectPinning>,
): Promise<readonly [PairedSide, PairedSide]> {
  fs.mkdirSync(SAMPLES_DIR, { recursive: true });
  progress(`500 req/s in paired turns: ${a.name} and ${b.name}, ${P99_PAIRED_TURNS} turns of 1 s each (${TURN_WARMUP_SECONDS} s warm-up per server)`);
  const result = await runTurnsAtRate([a, b], deployed, bodyFile, { rate: 500, turnsPerServer: P99_PAIRED_TURNS, samplesFile: path.join(SAMPLES_DIR, samples) }, pinning);
  progress(`  p99 ${ratio(result.sides[0].latencyUs!.p99, result.sides[1].latencyUs!.p99)}`);
  return result.sides;
}
