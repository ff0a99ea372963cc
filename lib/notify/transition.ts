import { createHash } from 'node:crypto';
import { shortId } from '../core/ids.ts';
import type { KindName } from '../core/run-target.ts';
import { truncateChars } from '../core/text.ts';
import type { AlertEvent, DeliveryLease, NotifyState, QueuedNotification } from '../state/notify-state.ts';
import type { OutcomeKind } from '../state/outcome-kind.ts';
import { enqueue, leaseDue, OUTBOX_BOUNDS, type OutboxBounds } from './outbox.ts';
import type { Policy } from './policy.ts';

/** What the transition is decided from: the outcome just recorded, as the same write records it. */
export interface OutcomeFacts {
  kind: KindName;
  outcome: OutcomeKind;
  ok: boolean;
  /** A skipped run records no result: nothing changes. */
  skipped: boolean;
  error?: string;
  /** The run whose outcome it is (a fresh id when it had none): the notification's idempotency key. */
  runUuid: string;
  atMs: number;
  /** The failure streak the write records (the khstate's consecutive failures, this outcome included). */
  consecutiveFailures: number;
  /** The check's run interval: a firing alert's endsAt at Alertmanager lies a few intervals ahead. */
  runIntervalMs: number;
}

/** What the write does about notifications. */
export type Transition = 'none' | 'fired' | 'reminded' | 'resolved';

export interface Decision {
  /** The notify state to write (undefined: none, as before); the same object when nothing changed. */
  state: NotifyState | undefined;
  transition: Transition;
  queued?: QueuedNotification;
  /** A failing run of a firing alert that queued nothing: Alertmanager's alert is renewed (no write). */
  renew: boolean;
}

/** Whether deciding needs the policy: a success of an alert that is not firing changes nothing that does. */
export const needsPolicy = (state: NotifyState | undefined, facts: Pick<OutcomeFacts, 'ok' | 'skipped'>) =>
  !facts.skipped && (!facts.ok || state?.alert === 'firing');

const MAX_ERROR_CHARS = 500;
/** endsAt at Alertmanager: four run intervals ahead (Prometheus renews by four evaluation intervals), at least 5 min. */
const renewMsOf = (runIntervalMs: number) => Math.max(4 * runIntervalMs, 5 * 60_000);

/** A stable, non-reversible key from a run UUID: run UUIDs are report credentials, never sent outside. */
export const keyOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 20);

/**
 * The transition an outcome makes, pure: OK → firing after policy.failureThreshold consecutive failures,
 * firing → resolved after successThreshold consecutive successes, a reminder at the first failing run
 * reminderMs after the last notice. A transition queues one notification (leased to `lease.holder`, who
 * delivers it after the write; due older ones are leased to it too). A policy with no channels never
 * fires; an alert already firing still resolves, quietly if there is nobody to tell.
 */
export function decideTransition(
  current: NotifyState | undefined,
  facts: OutcomeFacts,
  policy: Policy | undefined,
  opts: { lease?: DeliveryLease; bounds?: OutboxBounds } = {},
): Decision {
  const none = (state = current): Decision => ({ state, transition: 'none', renew: false });
  if (facts.skipped) return none();
  const s: NotifyState = current ?? { alert: 'ok', successes: 0, outbox: [] };
  if (facts.ok && s.alert === 'ok') {
    if (!current || current.sinceMs === undefined) return none();
    const { sinceMs: _, ...rest } = current;
    return none(rest);
  }
  if (!policy) throw new Error('decideTransition: this outcome needs the policy (see needsPolicy)');
  if (facts.ok) {
    const successes = s.successes + 1;
    if (successes < policy.successThreshold) return none({ ...s, successes });
    const resolved: NotifyState = { alert: 'ok', successes: 0, outbox: s.outbox, ...keep(s) };
    const to = s.channels ?? policy.channels;
    if (!policy.sendResolved || to.length === 0) return { ...none(resolved), transition: 'resolved' };
    return queue(resolved, notice('resolved', s, facts, to, policy), 'resolved', opts);
  }
  const sinceMs = s.sinceMs ?? facts.atMs;
  if (s.alert === 'ok') {
    if (!current && policy.channels.length === 0) return none();
    if (facts.consecutiveFailures < policy.failureThreshold || policy.channels.length === 0)
      return none({ ...s, sinceMs });
    const incident = keyOf(facts.runUuid);
    const firing: NotifyState = {
      ...s,
      alert: 'firing',
      incident,
      channels: policy.channels,
      severity: policy.severity,
      sinceMs,
      successes: 0,
      lastSentMs: facts.atMs,
    };
    return queue(firing, notice('firing', firing, facts, policy.channels, policy), 'fired', opts);
  }
  const still: NotifyState = { ...s, sinceMs, successes: 0 };
  const to = s.channels ?? policy.channels;
  const due = policy.reminderMs > 0 && facts.atMs - (s.lastSentMs ?? sinceMs) >= policy.reminderMs;
  if (!due || to.length === 0) return { state: still, transition: 'none', renew: true };
  const reminded = { ...still, lastSentMs: facts.atMs };
  return queue(reminded, notice('reminder', reminded, facts, to, policy), 'reminded', opts);
}

/** Bookkeeping an alert keeps across transitions. */
const keep = (s: NotifyState) => ({
  ...(s.dropped ? { dropped: s.dropped } : {}),
  ...(s.rejected ? { rejected: s.rejected } : {}),
  ...(s.problems ? { problems: s.problems } : {}),
});

function notice(
  event: AlertEvent,
  s: NotifyState,
  facts: OutcomeFacts,
  channels: string[],
  policy: Policy,
): QueuedNotification {
  return {
    id: `${keyOf(facts.runUuid)}-${event}`,
    incident: s.incident ?? keyOf(facts.runUuid),
    event,
    kind: facts.kind,
    outcome: facts.outcome,
    severity: s.severity ?? policy.severity,
    ...(facts.error ? { error: truncateChars(facts.error, MAX_ERROR_CHARS) } : {}),
    run: shortId(facts.runUuid),
    failures: facts.consecutiveFailures,
    sinceMs: s.sinceMs ?? facts.atMs,
    atMs: facts.atMs,
    renewMs: renewMsOf(facts.runIntervalMs),
    channels: [...channels],
    attempts: 0,
    nextAtMs: facts.atMs,
  };
}

function queue(
  state: NotifyState,
  queued: QueuedNotification,
  transition: Transition,
  opts: { lease?: DeliveryLease; bounds?: OutboxBounds },
): Decision {
  const { outbox, dropped } = enqueue(state.outbox, queued, opts.bounds ?? OUTBOX_BOUNDS);
  const leased = opts.lease ? leaseDue(outbox, opts.lease, queued.atMs) : outbox;
  const total = (state.dropped ?? 0) + dropped;
  return {
    state: { ...state, outbox: leased, ...(total ? { dropped: total } : {}) },
    transition,
    queued: leased.find((n) => n.id === queued.id) ?? queued,
    renew: false,
  };
}
