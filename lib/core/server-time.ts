/**
 * The API server's time, estimated from the `Date` header of its responses (pure). A `Date` has one-second
 * resolution and is written at some instant between the request leaving and the response arriving, so
 * each response bounds the offset between the server's clock and the local monotonic clock:
 *
 *   server time at that instant ∈ [date, date + 1 s),  that instant ∈ [sent, received]
 *   ⇒ offset = server − monotonic ∈ [date − received, date + 1 s − sent]
 *
 * The intersection of the bounds of several responses is the tightest estimate: one response pins the
 * offset to about a second, a series that crosses a second boundary pins it to about a round trip.
 */

/** One response: its `Date` header (epoch ms, whole seconds) and the local monotonic times around it. */
export interface TimeSample {
  sentMonoMs: number;
  receivedMonoMs: number;
  serverDateMs: number;
}

/** The range the offset (server epoch ms − local monotonic ms) lies in, and when it was learnt. */
export interface OffsetBounds {
  loMs: number;
  hiMs: number;
  atMonoMs: number;
}

/** The offset to use and how far off it may be, at most. */
export interface OffsetEstimate {
  offsetMs: number;
  uncertaintyMs: number;
  /** How many responses the estimate rests on. */
  samples: number;
}

/** RFC 7231's IMF-fixdate has whole seconds. */
export const DATE_RESOLUTION_MS = 1_000;

export function boundsOf(sample: TimeSample): OffsetBounds {
  return {
    loMs: sample.serverDateMs - sample.receivedMonoMs,
    hiMs: sample.serverDateMs + DATE_RESOLUTION_MS - sample.sentMonoMs,
    atMonoMs: sample.receivedMonoMs,
  };
}

/** A `Date` header as epoch ms; undefined when absent or not a date. */
export function parseHttpDate(header: string | null | undefined): number | undefined {
  if (!header) return undefined;
  const ms = Date.parse(header);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * The tightest offset consistent with the most recent bounds, newest first. Older bounds are taken only
 * while they agree with the newer ones: when the server's clock was stepped, or the local monotonic clock
 * drifted over a long life, the old bounds stop intersecting and the newest win.
 */
export function estimateOffset(newestFirst: readonly OffsetBounds[]): OffsetEstimate | undefined {
  const [newest, ...older] = newestFirst;
  if (!newest) return undefined;
  let { loMs, hiMs } = newest;
  let samples = 1;
  for (const b of older) {
    const lo = Math.max(loMs, b.loMs);
    const hi = Math.min(hiMs, b.hiMs);
    if (lo > hi) break;
    loMs = lo;
    hiMs = hi;
    samples++;
  }
  return { offsetMs: (loMs + hiMs) / 2, uncertaintyMs: (hiMs - loMs) / 2, samples };
}

/**
 * The API server's time now. A local wall clock that the responses cannot tell apart from the server's
 * (its offset lies within the bounds) is read as it is: machines whose clocks are synchronised decide
 * exactly as they would without the server's help. Any other is replaced by the estimate, in whole
 * milliseconds as Date.now() reads (times travel in URLs and annotations as integers).
 */
export function serverNowMs(estimate: OffsetEstimate, monoMs: number, wallMs: number): number {
  const localOffsetMs = wallMs - monoMs;
  return Math.abs(localOffsetMs - estimate.offsetMs) <= estimate.uncertaintyMs
    ? wallMs
    : Math.floor(monoMs + estimate.offsetMs);
}

/**
 * Adds a response's bounds to the kept ones (newest first): at most maxKept, none older than maxAgeMs.
 * Returns a new list.
 */
export function keepBounds(
  kept: readonly OffsetBounds[],
  next: OffsetBounds,
  opts: { maxKept: number; maxAgeMs: number },
): OffsetBounds[] {
  return [next, ...kept.filter((b) => next.atMonoMs - b.atMonoMs <= opts.maxAgeMs)].slice(0, opts.maxKept);
}
