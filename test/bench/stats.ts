/**
 * Summary of repeated measurements: the median and the spread, never a single sample. p95 only from 20
 * samples up: below that the 95th percentile is an interpolation between the two largest samples and says
 * no more than max does (docs/performance.md shows "–").
 */
export interface Summary {
  n: number;
  median: number;
  p95?: number;
  min: number;
  max: number;
  /** Interquartile range: the spread of the middle half. */
  iqr: number;
}

/** The fewest samples a p95 is given for. */
export const P95_MIN_SAMPLES = 20;

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (pos - lo);
}

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((x, y) => x - y);
  return {
    n: sorted.length,
    median: quantile(sorted, 0.5),
    ...(sorted.length >= P95_MIN_SAMPLES ? { p95: quantile(sorted, 0.95) } : {}),
    min: sorted[0] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
    iqr: quantile(sorted, 0.75) - quantile(sorted, 0.25),
  };
}

export function fmtMs(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '–';
  return ms >= 10_000
    ? `${(ms / 1000).toFixed(1)} s`
    : ms >= 1000
      ? `${(ms / 1000).toFixed(2)} s`
      : `${ms.toFixed(0)} ms`;
}
