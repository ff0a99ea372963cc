import { abortableDelay } from './abort.ts';

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
  let delayMs = opts.initialMs;
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
    await abortableDelay(Math.min(delayMs, remainingMs), opts.signal);
    delayMs = Math.min(delayMs * 2, opts.maxMs);
  }
}
