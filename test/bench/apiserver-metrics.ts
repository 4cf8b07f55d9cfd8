// The apiserver's own /metrics, read the way Prometheus reads it: the text format parsed into series,
// histograms summed over the series a filter keeps, the difference of two scrapes (what one run added),
// and quantiles from the buckets by histogram_quantile's linear interpolation.

/** One sample line: `name{labels} value`. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Every sample of a Prometheus text exposition; comments and blank lines skipped. */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key] = value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

export type LabelFilter = (labels: Readonly<Record<string, string>>) => boolean;
const ANY: LabelFilter = () => true;

/** The sum of every sample of `name` the filter keeps (a counter over its series). */
export function counterSum(samples: readonly Sample[], name: string, keep: LabelFilter = ANY): number {
  return samples.filter((sample) => sample.name === name && keep(sample.labels)).reduce((total, sample) => total + sample.value, 0);
}

/** A histogram summed over its series: cumulative counts by upper bound, ascending, +Inf last. */
export interface Histogram {
  readonly buckets: readonly { readonly le: number; readonly count: number }[];
  readonly count: number;
  readonly sum: number;
}

export function histogram(samples: readonly Sample[], name: string, keep: LabelFilter = ANY): Histogram {
  const byBound = new Map<number, number>();
  for (const sample of samples) {
    if (sample.name !== `${name}_bucket` || !keep(sample.labels)) continue;
    const le = sample.labels.le === '+Inf' ? Infinity : Number(sample.labels.le);
    byBound.set(le, (byBound.get(le) ?? 0) + sample.value);
  }
  return {
    buckets: [...byBound].sort(([a], [b]) => a - b).map(([le, count]) => ({ le, count })),
    count: counterSum(samples, `${name}_count`, keep),
    sum: counterSum(samples, `${name}_sum`, keep),
  };
}

/** What happened between two scrapes of the same histogram. */
export function histogramDelta(after: Histogram, before: Histogram): Histogram {
  const earlier = new Map(before.buckets.map(({ le, count }) => [le, count]));
  return {
    buckets: after.buckets.map(({ le, count }) => ({ le, count: count - (earlier.get(le) ?? 0) })),
    count: after.count - before.count,
    sum: after.sum - before.sum,
  };
}

/**
 * The q-quantile as Prometheus' histogram_quantile computes it: the bucket holding rank q * count,
 * interpolated linearly inside it (from 0 for the first bucket); in the +Inf bucket, the highest finite
 * bound. NaN when the histogram is empty.
 */
export function quantile(h: Histogram, q: number): number {
  const total = h.buckets.at(-1)?.count ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const { le, count } of h.buckets) {
    if (count >= rank) {
      if (le === Infinity) return lowerBound;
      return lowerBound + ((le - lowerBound) * (rank - lowerCount)) / Math.max(count - lowerCount, Number.MIN_VALUE);
    }
    lowerBound = le;
    lowerCount = count;
  }
  return lowerBound;
}

/** The share of observations at or below `bound` (a bucket's upper bound), 0 to 1. */
export function shareAtMost(h: Histogram, bound: number): number {
  const total = h.buckets.at(-1)?.count ?? 0;
  const bucket = h.buckets.find(({ le }) => le === bound);
  return total === 0 || !bucket ? NaN : bucket.count / total;
}

/** The labels a filter asks to equal. */
export const labelsAre =
  (wanted: Readonly<Record<string, string>>): LabelFilter =>
  (labels) =>
    Object.entries(wanted).every(([key, value]) => labels[key] === value);
