// `npm run bench`'s instructions and cache misses per request under callgrind (test/bench/instruction-counts.ts),
// the webhook and the baseline, or why they were not counted.
import { ServerSpec, detectPinning } from './bench-support';
import { progress } from './bench-progress';
import { InstructionCounts, countInstructions, valgrindMissing } from './instruction-counts';

/** callgrind: requests before counting starts (V8 optimizes the hot path meanwhile), and counted. */
export const CALLGRIND_WARM_REQUESTS = 20_000;
export const CALLGRIND_REQUESTS = 3_000;

/** Main-thread instructions and simulated cache misses per request, or why they were not counted. */
export type InstructionsResult = { counts: InstructionCounts[]; skipped?: undefined } | { skipped: string; counts?: undefined };

export async function instructionsPerRequest(specs: { webhook: ServerSpec; baseline: ServerSpec }, bodyFile: string, pinning: ReturnType<typeof detectPinning>): Promise<InstructionsResult> {
  const noValgrind = process.env.BENCH_INSTRUCTIONS === '0' ? 'BENCH_INSTRUCTIONS=0 was set' : valgrindMissing();
  if (noValgrind) {
    progress(`instruction counts skipped: ${noValgrind}`);
    return { skipped: noValgrind };
  }
  const counts: InstructionCounts[] = [];
  try {
    for (const name of ['webhook', 'baseline'] as const) {
      progress(`instructions per request under callgrind -> ${name} (${CALLGRIND_WARM_REQUESTS} requests uncounted, ${CALLGRIND_REQUESTS} counted; about a minute)`);
      counts.push(await countInstructions(specs[name], bodyFile, CALLGRIND_WARM_REQUESTS, CALLGRIND_REQUESTS, pinning.server));
    }
    return { counts };
  } catch (error) {
    // The rest of the report stands without this section; the reason goes in its place.
    const reason = `callgrind failed: ${(error as Error).message.split('\n').slice(0, 3).join(' ')}`;
    progress(reason);
    return { skipped: reason };
  }
}
