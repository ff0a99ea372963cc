import { Backoff, type BackoffPolicy } from '../core/backoff.ts';
import { truncateChars } from '../core/text.ts';
import type { DeliveryLease, NotifyState, QueuedNotification } from '../state/notify-state.ts';

/**
 * The outbox's bounds: it lives in an annotation (every watcher of the object receives it on each change),
 * and a receiver that is down for long must not grow it without end. Dropped notifications are counted in
 * the state (`dropped`) and logged.
 */
export interface OutboxBounds {
  /** Pending notifications kept; past it the oldest are dropped. */
  maxEntries: number;
  /** A notification still undelivered this long after it was decided is dropped. */
  maxAgeMs: number;
  /** Retries after a failed pass: 30 s, doubling, at most 30 min (lib/core/backoff.ts). */
  retry: BackoffPolicy;
}

export const OUTBOX_BOUNDS: OutboxBounds = {
  maxEntries: 8,
  maxAgeMs: 24 * 3600_000,
  retry: { initialMs: 30_000, maxMs: 30 * 60_000 },
};

const MAX_ERROR_CHARS = 300;

/** Whether an entry may be delivered now by holder: due, and leased to nobody else (or the lease lapsed). */
export function deliverableBy(n: QueuedNotification, holder: string, nowMs: number): boolean {
  return n.nextAtMs <= nowMs && (!n.lease || n.lease.holder === holder || n.lease.untilMs <= nowMs);
}

/**
 * The outbox with `queued` appended: a pending reminder of the same incident is superseded (dropped) by
 * any later notice, and past maxEntries the oldest are dropped. Returns how many were dropped by the bound.
 */
export function enqueue(
  outbox: readonly QueuedNotification[],
  queued: QueuedNotification,
  bounds: OutboxBounds = OUTBOX_BOUNDS,
): { outbox: QueuedNotification[]; dropped: number } {
  const kept = outbox.filter((n) => !(n.event === 'reminder' && n.incident === queued.incident));
  const all = [...kept, queued];
  const over = Math.max(0, all.length - bounds.maxEntries);
  return { outbox: all.slice(over), dropped: over };
}

/** Every entry deliverable now leased to `lease.holder` (the write that carries this claims them). */
export function leaseDue(
  outbox: readonly QueuedNotification[],
  lease: DeliveryLease,
  nowMs: number,
): QueuedNotification[] {
  return outbox.map((n) => (deliverableBy(n, lease.holder, nowMs) ? { ...n, lease } : n));
}

/** The entries leased to holder and still within their lease: the ones it may deliver. */
export function leasedTo(state: NotifyState | undefined, holder: string, nowMs: number) {
  return (state?.outbox ?? []).filter((n) => n.lease?.holder === holder && n.lease.untilMs > nowMs);
}

/** The entries anybody may claim now (the tick's sweep). */
export function dueEntries(state: NotifyState | undefined, holder: string, nowMs: number) {
  return (state?.outbox ?? []).filter((n) => deliverableBy(n, holder, nowMs));
}

/** What one delivery pass did with one entry's channels. */
export interface PassResult {
  id: string;
  delivered: string[];
  /** Refused for good (a 4xx): dropped from the entry, noted in the state. */
  rejected: Array<{ channel: string; status: number }>;
  /** Failed for now (down, 5xx, 429, timeout): retried after the backoff. */
  failed: Array<{ channel: string; error: string }>;
}

/** The delay before retry number `attempts` (1: the first retry): the backoff's attempts-th delay. */
export function retryDelayMs(attempts: number, policy: BackoffPolicy): number {
  const backoff = new Backoff(policy);
  let delay = backoff.next();
  for (let i = 1; i < attempts; i++) delay = backoff.next();
  return delay;
}

/**
 * The state after a delivery pass by holder: delivered and rejected channels leave their entry (an entry
 * with none left leaves the outbox), a failure counts an attempt and sets the backoff, the holder's lease
 * is given up. Entries the pass did not touch are left as they are, whoever holds them; entries older
 * than maxAgeMs are dropped. Applied to the state as it is now (a compare-and-swap re-reads it), not as
 * the pass saw it: an entry someone else finished meanwhile is simply gone.
 */
export function settle(
  state: NotifyState,
  results: readonly PassResult[],
  ctx: { holder: string; nowMs: number; bounds?: OutboxBounds },
): { state: NotifyState; expired: QueuedNotification[] } {
  const bounds = ctx.bounds ?? OUTBOX_BOUNDS;
  const byId = new Map(results.map((r) => [r.id, r]));
  let rejected = state.rejected;
  const outbox: QueuedNotification[] = [];
  const expired: QueuedNotification[] = [];
  for (const n of state.outbox) {
    const r = byId.get(n.id);
    let next = n;
    if (r) {
      const done = new Set([...r.delivered, ...r.rejected.map((x) => x.channel)]);
      const last = r.rejected.at(-1);
      if (last) rejected = { id: n.id, channel: last.channel, status: last.status, atMs: ctx.nowMs };
      next = { ...n, channels: n.channels.filter((c) => !done.has(c)) };
      if (r.failed.length) {
        const attempts = n.attempts + 1;
        const error = r.failed.map((f) => `${f.channel}: ${f.error}`).join('; ');
        next = {
          ...next,
          attempts,
          nextAtMs: ctx.nowMs + retryDelayMs(attempts, bounds.retry),
          lastError: truncateChars(error, MAX_ERROR_CHARS),
        };
      }
    }
    if (next.lease?.holder === ctx.holder) {
      const { lease: _, ...unleased } = next;
      next = unleased;
    }
    if (next.channels.length === 0) continue;
    if (ctx.nowMs - next.atMs > bounds.maxAgeMs) {
      expired.push(next);
      continue;
    }
    outbox.push(next);
  }
  const dropped = (state.dropped ?? 0) + expired.length;
  return {
    state: { ...state, outbox, ...(dropped ? { dropped } : {}), ...(rejected ? { rejected } : {}) },
    expired,
  };
}
