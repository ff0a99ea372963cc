import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { type QueuedNotification, readNotifyState } from '../state/notify-state.ts';
import type { NotifyConfig } from './config.ts';
import { claimDue, type DeliveryBudget, deliverPass, deliveryBudget, settlePass } from './deliver.ts';
import type { Hold } from './hold.ts';
import type { HttpSender } from './http.ts';
import { dueEntries } from './outbox.ts';
import type { Annotated, OutboxStore } from './store.ts';

/** One object the tick listed, and where its outbox is written. */
export interface SweepItem<S extends Annotated = Annotated> {
  listed: S;
  store: OutboxStore<S>;
  /** The silence or window holding its check's notifications now: its held entries wait. */
  hold?: Hold;
}

/** An item of any object type, kept with its own store (the sweep only reads annotations and hands it back). */
export const sweepItem = <S extends Annotated>(listed: S, store: OutboxStore<S>, hold?: Hold): SweepItem =>
  ({ listed, store, ...(hold ? { hold } : {}) }) as unknown as SweepItem;

export interface SweepResult {
  /** Objects whose due notifications this sweep claimed. */
  claimed: number;
  /** Requests made to receivers. */
  requests: number;
}

/**
 * The tick's pass over outboxes left behind (a runner killed after its outcome write, a receiver that was
 * down): from the objects it listed anyway, so finding them costs no request; an object with something
 * due costs a claim write, the deliveries, and a settle write. Bounded by the configuration's
 * maxDeliveries. Never throws.
 */
export async function sweepOutboxes(
  deps: { config: NotifyConfig; http: HttpSender; clock: Clock; log: Log; budget?: DeliveryBudget },
  items: readonly SweepItem[],
  holder: string,
): Promise<SweepResult> {
  const budget = deps.budget ?? deliveryBudget(deps.config.maxDeliveries);
  const d = { ...deps, budget };
  let claimed = 0;
  const before = budget.used;
  for (const item of items) {
    if (budget.used >= deps.config.maxDeliveries) break;
    // An entry held by a silence waits while its check is still silenced (extended since it was queued).
    const eligible = (n: QueuedNotification) => !(n.held && item.hold);
    const due = dueEntries(readNotifyState(item.listed), holder, deps.clock.nowMs()).filter(eligible);
    if (due.length === 0) continue;
    try {
      const claim = await claimDue(d, item.store, item.listed, holder, eligible);
      if (!claim) continue;
      claimed++;
      const { namespace, name } = item.listed.metadata;
      const results = await deliverPass(d, { namespace, name }, claim.entries, claim.untilMs);
      await settlePass(d, item.store, claim.written, results, holder);
    } catch (error) {
      deps.log.warn('outbox sweep of one object failed; the next tick tries again', {
        object: `${item.listed.metadata.namespace}/${item.listed.metadata.name}`,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return { claimed, requests: budget.used - before };
}
