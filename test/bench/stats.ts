// Percentiles and formatting shared by the benchmarks, the load generator and the soak test.

export interface Distribution {
  readonly count: number;
  readonly min: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentiles of the first `count` samples (the array is sorted in place). */
export function distribution(samples: Float64Array | number[], count = samples.length): Distribution {
  if (count === 0) return { count: 0, min: NaN, p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN, mean: NaN };
  const sorted = samples instanceof Float64Array ? samples.subarray(0, count).sort() : samples.slice(0, count).sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(count - 1, Math.max(0, Math.ceil(q * count) - 1))];
  let sum = 0;
  for (let i = 0; i < count; i++) sum += sorted[i];
  return { count, min: sorted[0], p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: sorted[count - 1], mean: sum / count };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** A number with a sensible number of significant digits for a table. */
export function fmt(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return 'n/a';
  const abs = Math.abs(Number(value.toFixed(1)));
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(digits >= 3 ? 1 : 0);
  if (abs >= 1) return value.toFixed(digits >= 3 ? 2 : 1);
  return value.toPrecision(digits);
}

export function ratio(value: number, baseline: number): string {
  if (!Number.isFinite(value) || !Number.isFinite(baseline) || baseline === 0) return 'n/a';
  return `${(value / baseline).toFixed(2)}x`;
}

/** A Markdown table. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export const MB = 1024 * 1024;
