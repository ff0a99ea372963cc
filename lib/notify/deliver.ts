import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { done, write } from '../kube/cas.ts';
import { type QueuedNotification, readNotifyState, withNotifyState } from '../state/notify-state.ts';
import { type ChannelConfig, verdictOf } from './channel.ts';
import { RENDERERS } from './channels/index.ts';
import type { NotifyConfig } from './config.ts';
import type { HttpSender } from './http.ts';
import type { Notice } from './message.ts';
import { deliverableBy, type PassResult, settle } from './outbox.ts';
import { type Annotated, NOTIFY_WRITER, type OutboxStore } from './store.ts';

/** The ports and settings every delivery of one process shares. */
export interface DeliveryDeps {
  config: NotifyConfig;
  http: HttpSender;
  clock: Clock;
  log: Log;
  /** Requests to receivers this invocation may still make (NotifyConfig.maxDeliveries at first). */
  budget: DeliveryBudget;
}

/** A count shared by every delivery of an invocation. */
export interface DeliveryBudget {
  take(): boolean;
  readonly used: number;
}

export function deliveryBudget(max: number): DeliveryBudget {
  let used = 0;
  return {
    take: () => {
      if (used >= max) return false;
      used++;
      return true;
    },
    get used() {
      return used;
    },
  };
}

const LEASE_MARGIN_MS = 5_000;
const MAX_ATTEMPTS = 6;

/**
 * How long a holder gets to deliver these entries: channels are tried one after another per channel, in
 * outbox order, and channels concurrently, so the longest channel's sum of timeouts, plus a margin.
 */
export function leaseSpanMs(entries: readonly Pick<QueuedNotification, 'channels'>[], config: NotifyConfig) {
  const perChannel = new Map<string, number>();
  for (const n of entries)
    for (const c of n.channels)
      perChannel.set(c, (perChannel.get(c) ?? 0) + (config.channels.get(c)?.timeoutMs ?? 0));
  return Math.max(0, ...perChannel.values()) + LEASE_MARGIN_MS;
}

/**
 * One delivery pass over entries (in outbox order) of one object: each channel takes its entries one at a
 * time, in order, stopping at its first failure (a later notice never overtakes an earlier one), channels
 * side by side. Stops before a request could outlast untilMs (the lease) or the budget. Never throws.
 */
export async function deliverPass(
  deps: DeliveryDeps,
  ref: { namespace: string; name: string },
  entries: readonly QueuedNotification[],
  untilMs: number,
): Promise<PassResult[]> {
  const results = new Map<string, PassResult>(
    entries.map((n) => [n.id, { id: n.id, delivered: [], rejected: [], failed: [] }]),
  );
  const channels = [...new Set(entries.flatMap((n) => n.channels))];
  await Promise.all(
    channels.map(async (name) => {
      const channel = deps.config.channels.get(name);
      for (const n of entries) {
        if (!n.channels.includes(name)) continue;
        const result = results.get(n.id) as PassResult;
        if (!channel) {
          // Removed from the configuration since it was queued: nobody to send it to.
          result.rejected.push({ channel: name, status: 0 });
          deps.log.error('notification channel no longer configured; dropped', { channel: name, id: n.id });
          continue;
        }
        if (deps.clock.nowMs() + channel.timeoutMs > untilMs || !deps.budget.take()) return;
        const verdict = await send(deps, channel, { ...n, ...ref });
        if (verdict.kind === 'delivered') result.delivered.push(name);
        else if (verdict.kind === 'rejected') {
          result.rejected.push({ channel: name, status: verdict.status });
          deps.log.error('receiver refused the notification; not retried', {
            channel: name,
            status: verdict.status,
            id: n.id,
            check: `${ref.namespace}/${ref.name}`,
          });
        } else {
          result.failed.push({ channel: name, error: verdict.error });
          deps.log.warn('notification not delivered; retried later', {
            channel: name,
            error: verdict.error,
            id: n.id,
            attempts: n.attempts + 1,
            check: `${ref.namespace}/${ref.name}`,
          });
          return;
        }
      }
    }),
  );
  return [...results.values()].filter((r) => r.delivered.length || r.rejected.length || r.failed.length);
}

/** One request to one receiver, its answer classified; a transport error or timeout is a failure for now. */
export async function send(
  deps: Pick<DeliveryDeps, 'config' | 'http' | 'clock'>,
  channel: ChannelConfig,
  notice: Notice,
) {
  const request = RENDERERS[channel.type](channel, notice, {
    nowMs: deps.clock.nowMs(),
    statusPageUrl: deps.config.statusPageUrl,
  });
  try {
    const answer = await deps.http.post(request, channel.timeoutMs);
    return verdictOf(answer.status, answer.body);
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    const name = (error as Error).name;
    const why =
      name === 'TimeoutError'
        ? `no answer within ${channel.timeoutMs} ms`
        : (cause ?? (error as Error).message);
    return { kind: 'failed' as const, error: why };
  }
}

/**
 * Writes a pass's results into the object's outbox (outbox.ts settle), re-reading on a conflict; held is
 * the version last written or seen (the first attempt writes on it without a read). Logs what expired.
 * A write that cannot be made is logged: the entries' lease lapses and they are delivered again later,
 * which the idempotency keys make harmless at the receivers that honour them.
 */
export async function settlePass<S extends Annotated>(
  deps: Pick<DeliveryDeps, 'clock' | 'log'>,
  store: OutboxStore<S>,
  held: S | undefined,
  results: readonly PassResult[],
  holder: string,
): Promise<void> {
  try {
    const expired = await store.update<QueuedNotification[]>({
      writer: NOTIFY_WRITER,
      maxAttempts: MAX_ATTEMPTS,
      log: deps.log,
      ...(held ? { initial: held } : {}),
      decide: (current) => {
        const state = readNotifyState(current);
        if (!current || !state) return done([]);
        const settled = settle(state, results, { holder, nowMs: deps.clock.nowMs() });
        return write(withNotifyState(current, settled.state), () => settled.expired);
      },
    });
    for (const n of expired)
      deps.log.error('notification undeliverable for a day; dropped', {
        id: n.id,
        channels: n.channels,
        lastError: n.lastError,
      });
  } catch (error) {
    deps.log.warn('could not mark notifications delivered; they are delivered again after their lease', {
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/**
 * Claims the due entries of an object for holder (the tick's sweep, or a runner finding older ones):
 * a compare-and-swap write of their lease. Returns the written version and the entries claimed (none:
 * nothing written).
 */
export async function claimDue<S extends Annotated>(
  deps: Pick<DeliveryDeps, 'clock' | 'log' | 'config'>,
  store: OutboxStore<S>,
  listed: S,
  holder: string,
  eligible: (n: QueuedNotification) => boolean = () => true,
): Promise<{ written: S; entries: QueuedNotification[]; untilMs: number } | undefined> {
  return store.update({
    writer: NOTIFY_WRITER,
    maxAttempts: MAX_ATTEMPTS,
    log: deps.log,
    initial: listed,
    decide: (current) => {
      const state = readNotifyState(current);
      const nowMs = deps.clock.nowMs();
      const due = (state?.outbox ?? []).filter((n) => deliverableBy(n, holder, nowMs) && eligible(n));
      if (!current || !state || due.length === 0) return done(undefined);
      const lease = { holder, untilMs: nowMs + leaseSpanMs(due, deps.config) };
      const ids = new Set(due.map((n) => n.id));
      const outbox = state.outbox.map((n) => (ids.has(n.id) ? { ...n, lease } : n));
      return write(withNotifyState(current, { ...state, outbox }), (written) => ({
        written,
        entries: outbox.filter((n) => ids.has(n.id)),
        untilMs: lease.untilMs,
      }));
    },
  });
}
