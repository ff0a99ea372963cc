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
    /**
     * Tries at least this many times even past totalMs: an overloaded API server can take 30 s or more to
     * answer 504, which would use up the time before a second try (default 1).
     */
    minAttempts?: number;
    /** Which errors are worth another try (default isTransient). */
    retryOn?: (error: unknown) => boolean;
    now?: () => number;
    signal?: AbortSignal;
  } = {},
): Promise<T> {
  const now = opts.now ?? Date.now;
  const retryOn = opts.retryOn ?? isTransient;
  const deadline = now() + (opts.totalMs ?? 15_000);
  let delayMs = opts.initialMs ?? 200;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      const remainingMs = deadline - now();
      if (!retryOn(error) || (remainingMs <= 0 && attempt >= (opts.minAttempts ?? 1))) throw error;
      await abortableDelay(
        Math.max(0, Math.min(delayMs, remainingMs > 0 ? remainingMs : delayMs)),
        opts.signal,
      );
      delayMs = Math.min(delayMs * 2, opts.maxMs ?? 2_000);
    }
  }
}

/** A 429: the API server refused the request before doing anything, so even a write is safe to send again. */
export function isTooManyRequests(error: unknown): boolean {
  return classifyApiError(error) === ApiErrorKind.TooManyRequests;
}
