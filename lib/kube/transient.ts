import { abortableDelay } from '../core/abort.ts';
import { ApiErrorKind, classifyApiError } from './errors.ts';

/** Errors worth another try: the API server asked to back off (429, e.g. "storage is (re)initializing"
 * right after a CRD changed) or was briefly unavailable. */
export function isTransient(error: unknown): boolean {
  const kind = classifyApiError(error);
  return kind === ApiErrorKind.TooManyRequests || kind === ApiErrorKind.Unavailable;
}

/**
 * Calls fn again after a transient API error, with capped exponential backoff, until it succeeds, fails
 * otherwise, or totalMs has passed. A short-lived command (tick, sync) uses it for its reads, so an API
 * server that is settling does not cost a whole tick.
 */
export async function retryTransient<T>(
  fn: () => Promise<T>,
  opts: {
    totalMs?: number;
    initialMs?: number;
    maxMs?: number;
    now?: () => number;
    signal?: AbortSignal;
  } = {},
): Promise<T> {
  const now = opts.now ?? Date.now;
  const deadline = now() + (opts.totalMs ?? 15_000);
  let delayMs = opts.initialMs ?? 200;
  for (;;) {
    try {
      return await fn();
    } catch (error) {
      const remainingMs = deadline - now();
      if (!isTransient(error) || remainingMs <= 0) throw error;
      await abortableDelay(Math.min(delayMs, remainingMs), opts.signal);
      delayMs = Math.min(delayMs * 2, opts.maxMs ?? 2_000);
    }
  }
}
