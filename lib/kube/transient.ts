import { abortableDelay } from '../core/abort.ts';
import { Backoff } from '../core/backoff.ts';
import { ApiErrorKind, classifyApiError } from './errors.ts';

/** Errors worth another try: the API server asked to back off (429, e.g. "storage is (re)initializing"
 * right after a CRD changed) or was briefly unavailable. */
export function isTransient(error: unknown): boolean {
  const kind = classifyApiError(error);
  return kind === ApiErrorKind.TooManyRequests || kind === ApiErrorKind.Unavailable;
}

/** A 429: the API server refused the request before doing anything, so even a write is safe to send again. */
export function isTooManyRequests(error: unknown): boolean {
  return classifyApiError(error) === ApiErrorKind.TooManyRequests;
}

/**
 * How long the runner keeps trying a request the API server refused with 429 (priority and fairness shedding
 * load; it did nothing). Long, because the API server's priority and fairness asks for a longer Retry-After
 * the longer its queues are, so a budget of seconds gives up on requests it would have served. client-go
 * honours Retry-After for up to 10 tries; five minutes is about that. A lease renewal refused meanwhile lets
 * the lease lapse, which the lease keeper notices, and the resourceVersion preconditions keep a lapsed run
 * from being written twice.
 */
export const THROTTLED_MS = 300_000;

/** The longest Retry-After honoured: a server asking for more is waited on this long, then asked again. */
export const MAX_RETRY_AFTER_MS = 60_000;

/**
 * The wait a 429 or 503 asks for in its Retry-After header (whole seconds, as the API server's priority and
 * fairness sends it), capped at MAX_RETRY_AFTER_MS; undefined without one. An HTTP date is not read: it
 * would compare this machine's clock with the server's.
 */
export function retryAfterMs(error: unknown): number | undefined {
  const headers = (error as { headers?: unknown } | null)?.headers;
  if (!headers || typeof headers !== 'object') return undefined;
  const raw = Object.entries(headers as Record<string, unknown>).find(
    ([name]) => name.toLowerCase() === 'retry-after',
  )?.[1];
  const text = Array.isArray(raw) ? raw[0] : raw;
  if (typeof text !== 'string' || !/^\s*\d{1,6}\s*$/.test(text)) return undefined;
  return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
}

/**
 * Calls fn again after a transient API error, with capped exponential backoff, until it succeeds, fails
 * otherwise, or its time is up. A short-lived command (tick, sync) uses it for its reads, so an API server
 * that is settling does not cost a whole tick; the runner for its reads and (after a 429 only) its writes.
 *
 * The waits are jittered (between half and all of the backoff; a Retry-After stretched by up to a quarter),
 * so a thousand checks refused in the same second do not come back in the same second, and never shorter
 * than the server's Retry-After. A 429 says the
 * server did nothing and is shedding load (priority and fairness), so a caller may keep trying 429s for
 * throttledMs rather than totalMs, as client-go keeps retrying them: the runner does (kube-port.ts), since
 * a check that waits its turn costs less than one that fails and is sent again by the next tick.
 */
export async function retryTransient<T>(
  fn: () => Promise<T>,
  opts: {
    totalMs?: number;
    /** How long 429s are tried again (at least totalMs; default totalMs). */
    throttledMs?: number;
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
    /** Injected for tests: a number in [0, 1) for the jitter (default Math.random). */
    random?: () => number;
    /** Injected for tests: how a wait is waited (default abortableDelay). */
    sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
    signal?: AbortSignal;
  } = {},
): Promise<T> {
  const now = opts.now ?? Date.now;
  const random = opts.random ?? Math.random;
  const sleep = opts.sleep ?? abortableDelay;
  const retryOn = opts.retryOn ?? isTransient;
  const startMs = now();
  const totalMs = opts.totalMs ?? 15_000;
  const throttledMs = Math.max(totalMs, opts.throttledMs ?? totalMs);
  const backoff = new Backoff({ initialMs: opts.initialMs ?? 200, maxMs: opts.maxMs ?? 2_000 });
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (!retryOn(error)) throw error;
      const remainingMs = startMs + (isTooManyRequests(error) ? throttledMs : totalMs) - now();
      if (remainingMs <= 0 && attempt >= (opts.minAttempts ?? 1)) throw error;
      const delayMs = backoff.next();
      const backoffMs = delayMs / 2 + (random() * delayMs) / 2;
      // A Retry-After is stretched by up to a quarter, so the requests refused together come back apart.
      const waitMs = Math.max(backoffMs, (retryAfterMs(error) ?? 0) * (1 + random() / 4));
      await sleep(Math.max(0, remainingMs > 0 ? Math.min(waitMs, remainingMs) : waitMs), opts.signal);
    }
  }
}
