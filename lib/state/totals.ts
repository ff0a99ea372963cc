import { OutcomeKind } from './outcome-kind.ts';
import type { KhState } from './resources.ts';

/**
 * Lifetime counts of a check's outcomes, kept in the khstate beside the bounded history. Prometheus
 * counters and histograms must only grow: counted from the history window they would drop whenever an
 * old entry rolls out, which rate() reads as a reset. Stored here they survive runner and server restarts
 * and read the same from every replica; they restart at zero only with the khstate.
 */
export const TOTALS_ANNOTATION = 'khrun.dev/totals';

/** Upper bounds of the run-duration histogram (v3's), in seconds; +Inf is implied. */
export const DURATION_BUCKETS_SECONDS = [1, 5, 10, 30, 60, 120, 300] as const;

export interface OutcomeTotals {
  succeeded: number;
  failed: number;
  timedOut: number;
  executionError: number;
  skipped: number;
  /** Last recorded success (epoch ms). */
  lastSuccessMs?: number;
  /** The khcheck's runInterval when the last outcome was recorded, so staleness can be judged. */
  runIntervalMs?: number;
  /** The khcheck's timeout when the last outcome was recorded: with runIntervalMs, when a run is overdue. */
  timeoutMs?: number;
  /** Non-cumulative counts per bucket, keyed by upper bound ("1", "5", ..., "+Inf"). */
  durationBuckets: Record<string, number>;
  durationSumSeconds: number;
}

const BUCKET_KEYS = [...DURATION_BUCKETS_SECONDS.map(String), '+Inf'];

export function emptyTotals(): OutcomeTotals {
  return {
    succeeded: 0,
    failed: 0,
    timedOut: 0,
    executionError: 0,
    skipped: 0,
    durationBuckets: Object.fromEntries(BUCKET_KEYS.map((k) => [k, 0])),
    durationSumSeconds: 0,
  };
}

const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);
const optionalMs = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

/** Parses the annotation field by field: a damaged field reads as zero, never as a negative count. */
export function parseTotals(text: string | undefined): OutcomeTotals {
  const totals = emptyTotals();
  if (!text) return totals;
  let raw: Record<string, unknown>;
  try {
    const value = JSON.parse(text) as unknown;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return totals;
    raw = value as Record<string, unknown>;
  } catch {
    return totals;
  }
  totals.succeeded = count(raw.succeeded);
  totals.failed = count(raw.failed);
  totals.timedOut = count(raw.timedOut);
  totals.executionError = count(raw.executionError);
  totals.skipped = count(raw.skipped);
  const lastSuccessMs = optionalMs(raw.lastSuccessMs);
  if (lastSuccessMs !== undefined) totals.lastSuccessMs = lastSuccessMs;
  const runIntervalMs = optionalMs(raw.runIntervalMs);
  if (runIntervalMs !== undefined) totals.runIntervalMs = runIntervalMs;
  const timeoutMs = optionalMs(raw.timeoutMs);
  if (timeoutMs !== undefined) totals.timeoutMs = timeoutMs;
  const buckets = (raw.durationBuckets ?? {}) as Record<string, unknown>;
  for (const key of BUCKET_KEYS) totals.durationBuckets[key] = count(buckets[key]);
  const sum = raw.durationSumSeconds;
  totals.durationSumSeconds = typeof sum === 'number' && Number.isFinite(sum) && sum >= 0 ? sum : 0;
  return totals;
}

export function readTotals(state: KhState | null | undefined): OutcomeTotals {
  return parseTotals(state?.metadata.annotations?.[TOTALS_ANNOTATION]);
}

export const failureCount = (t: OutcomeTotals) => t.failed + t.timedOut + t.executionError;

/** Observations in the duration histogram: the sum of its buckets, so the two always agree. */
export const durationCount = (t: OutcomeTotals) =>
  Object.values(t.durationBuckets).reduce((sum, n) => sum + n, 0);

/** The bucket an observation falls in: the smallest upper bound ≥ seconds, else +Inf. */
export function bucketOf(seconds: number): string {
  const bound = DURATION_BUCKETS_SECONDS.find((b) => seconds <= b);
  return bound === undefined ? '+Inf' : String(bound);
}

/**
 * The totals with one more outcome. A skipped run is counted but not observed in the duration histogram:
 * it measured nothing about the check.
 */
export function addOutcome(
  totals: OutcomeTotals,
  outcome: {
    kind: OutcomeKind;
    durationMs: number;
    atMs: number;
    runIntervalMs?: number;
    timeoutMs?: number;
  },
): OutcomeTotals {
  const next: OutcomeTotals = { ...totals, durationBuckets: { ...totals.durationBuckets } };
  if (outcome.runIntervalMs !== undefined) next.runIntervalMs = outcome.runIntervalMs;
  if (outcome.timeoutMs !== undefined) next.timeoutMs = outcome.timeoutMs;
  switch (outcome.kind) {
    case OutcomeKind.Succeeded:
      next.succeeded += 1;
      next.lastSuccessMs = outcome.atMs;
      break;
    case OutcomeKind.Failed:
      next.failed += 1;
      break;
    case OutcomeKind.TimedOut:
      next.timedOut += 1;
      break;
    case OutcomeKind.ExecutionError:
      next.executionError += 1;
      break;
    case OutcomeKind.Skipped:
      next.skipped += 1;
      return next;
  }
  const seconds = Math.max(0, outcome.durationMs) / 1000;
  const bucket = bucketOf(seconds);
  next.durationBuckets[bucket] = (next.durationBuckets[bucket] ?? 0) + 1;
  next.durationSumSeconds += seconds;
  return next;
}
