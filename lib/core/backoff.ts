import { abortableDelay } from './abort.ts';

/** A capped exponential backoff: the first delay, and the cap every later doubling stops at. */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

/**
 * The delays of one retry loop: next() gives initialMs, then twice the last delay, never more than maxMs
 * after the first; reset() starts over (a loop that made progress). Every backoff in lib/ counts its
 * delays with it; what a loop adds (jitter, Retry-After, its deadline) stays in the loop.
 */
export class Backoff {
  private nextMs: number;
  constructor(private readonly policy: BackoffPolicy) {
    this.nextMs = policy.initialMs;
  }
  /** The delay to wait now; the following one doubles, up to maxMs. */
  next(): number {
    const delayMs = this.nextMs;
    this.nextMs = Math.min(this.nextMs * 2, this.policy.maxMs);
    return delayMs;
  }
  /** The delay next() will give, without taking it. */
  peek(): number {
    return this.nextMs;
  }
  reset(): void {
    this.nextMs = this.policy.initialMs;
  }
}

/** How the report paths wait for an API server that is unavailable: 250 ms, doubling, at most 2 s. */
export const API_OUTAGE_BACKOFF: BackoffPolicy = { initialMs: 250, maxMs: 2_000 };

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Absolute time after which no further attempt starts. */
  deadlineEpochMs: number;
  signal?: AbortSignal;
  /** Injected for tests; defaults to the wall clock. */
  now?: () => number;
}

/**
 * Calls attempt() until it returns a value other than undefined, backing off exponentially between
 * attempts (capped at maxMs) and never past the deadline. Used where nothing can be watched: a
 * process that is still starting up has no API to watch yet.
 */
export async function retryWithBackoff<T>(
  what: string,
  attempt: () => Promise<T | undefined>,
  opts: BackoffOptions,
): Promise<T> {
  const now = opts.now ?? Date.now;
  const backoff = new Backoff(opts);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    const remainingMs = opts.deadlineEpochMs - now();
    if (remainingMs <= 0) {
      throw new Error(`timed out waiting for ${what}`, { cause: lastError });
    }
    await abortableDelay(Math.min(backoff.next(), remainingMs), opts.signal);
  }
}
