// `npx tsx test/bench/pool-p99.ts <clone> <clone> <clone>`: the p99 at 500 req/s of several
// `npm run bench` runs pooled. Each run writes every answer's latency of its paired 500 req/s turns to
// build/bench-samples/ in its clone (webhook vs baseline, and the baseline against a copy of itself);
// this reads them, pools each server's answers over the runs, and prints the pooled p99s, their
// ratio, and the same for the two identical servers: the spread that ratio sits in.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { distribution, fmt } from './stats';

export const SAMPLES_SUBDIR = path.join('build', 'bench-samples');
export const P99_SAMPLES = { paired: 'p99-500-webhook-baseline.json', control: 'p99-500-baseline-baseline.json' } as const;

/** Nearest-rank p99 of every run's samples of one side, pooled. */
function pooledP99(runs: number[][]): { p99: number; count: number } {
  const all = runs.flat();
  return { p99: distribution(all).p99, count: all.length };
}

function main(clones: string[]): void {
  if (clones.length === 0) throw new Error('usage: pool-p99.ts <clone dir>... (each after npm run bench)');
  for (const [label, file, names] of [
    ['webhook vs baseline', P99_SAMPLES.paired, ['webhook', 'baseline']],
    ['the same server twice (baseline vs a copy)', P99_SAMPLES.control, ['baseline', 'baseline copy']],
  ] as const) {
    const runs = clones.map((clone) => JSON.parse(fs.readFileSync(path.join(clone, SAMPLES_SUBDIR, file), 'utf8')) as [number[], number[]]);
    const perRun = runs.map(([a, b]) => `${fmt(distribution([...a]).p99)} vs ${fmt(distribution([...b]).p99)} µs`);
    const a = pooledP99(runs.map((run) => run[0]));
    const b = pooledP99(runs.map((run) => run[1]));
    console.log(`${label}, ${runs.length} runs pooled: ${names[0]} p99 ${fmt(a.p99)} µs (${a.count} answers) vs ${names[1]} ${fmt(b.p99)} µs (${b.count}) = ${(a.p99 / b.p99).toFixed(2)}x; per run: ${perRun.join('; ')}`);
  }
}

if (require.main === module) main(process.argv.slice(2));
