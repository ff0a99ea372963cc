import type { DeliveryLease, NotifyState, QueuedNotification } from '../state/notify-state.ts';
import { flapStep } from './flap-step.ts';
import type { Hold } from './hold.ts';
import { holdStep, rehold } from './hold-step.ts';
import { type AlertStep, keyOf, notice, type OutcomeFacts, type Transition } from './notice.ts';
import { enqueue, leaseDue, OUTBOX_BOUNDS, type OutboxBounds } from './outbox.ts';
import type { Policy } from './policy.ts';

export { keyOf, type OutcomeFacts, renewMsOf, type Transition } from './notice.ts';

/** What else the decision is made from, besides the state, the outcome and the policy. */
export interface DecisionContext {
  /** Who delivers what this write queues (leased to them), and until when. */
  lease?: DeliveryLease;
  bounds?: OutboxBounds;
  /** The silence or maintenance window in force (hold.ts holdAt): notices are held, or dropped. */
  hold?: Hold;
  /** The failing parents that hold this failing outcome back (dependencies.ts decideBlocking). */
  blockedBy?: string[];
}

export interface Decision {
  /** The notify state to write (undefined: none, as before); the same object when nothing changed. */
  state: NotifyState | undefined;
  transition: Transition;
  /** What the write queues, in order (usually one; a settling check may queue a resolution and a firing). */
  queued: QueuedNotification[];
  /** Why a transition queued nothing: a failing parent, a silence (after-silence: drop), flapping. */
  suppressed?: 'blocked' | 'silenced' | 'flapping';
  /** A failing run of a firing (or flapping) alert that queued nothing: Alertmanager's alert is renewed (no write). */
  renew: boolean;
}

/** Whether deciding needs the policy: a success changes nothing that does, unless an alert is open or held. */
export const needsPolicy = (state: NotifyState | undefined, facts: Pick<OutcomeFacts, 'ok' | 'skipped'>) =>
  !facts.skipped &&
  (!facts.ok ||
    state?.alert === 'firing' ||
    state?.flapping !== undefined ||
    state?.quiet === true ||
    (state?.outbox.some((n) => n.held) ?? false));

/**
 * The transition an outcome makes, pure: OK → firing after policy.failureThreshold consecutive failures
 * (not while a parent is failing: ctx.blockedBy), firing → resolved after successThreshold consecutive
 * successes, a reminder at the first failing run reminderMs after the last notice. Then flapping
 * (flap-step.ts: the policy's count of transitions within its window become one notice, and one when it
 * settles), then a silence or maintenance window (hold-step.ts: held until it ends, or dropped). What is
 * queued is leased to `ctx.lease.holder`, who delivers it after the write (due older entries too). A
 * policy with no channels never fires; an alert already firing still resolves, quietly if there is
 * nobody to tell.
 */
export function decideTransition(
  current: NotifyState | undefined,
  facts: OutcomeFacts,
  policy: Policy | undefined,
  ctx: DecisionContext = {},
): Decision {
  const unchanged: Decision = { state: current, transition: 'none', queued: [], renew: false };
  if (facts.skipped) return unchanged;
  let s: NotifyState = current ?? { alert: 'ok', successes: 0, outbox: [] };
  const blocked = !facts.ok && ctx.blockedBy?.length ? ctx.blockedBy : undefined;
  s = without(s, 'blocked', 'hold');
  if (blocked) s.blocked = { by: [...blocked], atMs: facts.atMs };
  if (ctx.hold) s.hold = { ...ctx.hold };
  if (!policy) {
    if (needsPolicy(current, facts))
      throw new Error('decideTransition: this outcome needs the policy (see needsPolicy)');
    return sameIfUnchanged(current, without(s, 'sinceMs'), unchanged);
  }
  if (!current && policy.channels.length === 0 && !blocked && !ctx.hold) return unchanged;
  s = { ...s, outbox: rehold(s.outbox, ctx.hold, facts.atMs) };
  const step = flapStep(alertStep(s, facts, policy, blocked), s, facts, policy);
  const held = holdStep(step, facts, policy, ctx.hold);
  let state = held.state;
  const queued: QueuedNotification[] = [];
  const bounds = ctx.bounds ?? OUTBOX_BOUNDS;
  for (const n of held.notices) {
    const cancelled = cancelHeldFiring(state, n, facts.atMs);
    if (cancelled) {
      state = cancelled;
      continue;
    }
    const { outbox, dropped } = enqueue(state.outbox, n, bounds);
    const total = (state.dropped ?? 0) + dropped;
    state = { ...state, outbox, ...(total ? { dropped: total } : {}) };
    queued.push(n);
  }
  if (ctx.lease && queued.length) state = { ...state, outbox: leaseDue(state.outbox, ctx.lease, facts.atMs) };
  const ids = new Set(queued.map((n) => n.id));
  const renew =
    !facts.ok &&
    queued.length === 0 &&
    (state.flapping !== undefined ||
      (state.alert === 'firing' && !state.quiet && !heldFiring(state, facts.atMs)));
  return sameIfUnchanged(current, state, {
    state,
    transition: held.transition,
    queued: state.outbox.filter((n) => ids.has(n.id)),
    ...(held.suppressed ? { suppressed: held.suppressed } : {}),
    renew,
  });
}

/** The decision with the current object itself when the state did not change (no annotation rewritten). */
function sameIfUnchanged(current: NotifyState | undefined, next: NotifyState, d: Decision): Decision {
  if (!current && isBlank(next)) return { ...d, state: undefined };
  if (current && JSON.stringify(normal(current)) === JSON.stringify(normal(next)))
    return { ...d, state: current };
  return { ...d, state: next };
}

const isBlank = (s: NotifyState) =>
  JSON.stringify(normal(s)) === JSON.stringify(normal({ alert: 'ok', successes: 0, outbox: [] }));
const normal = (s: NotifyState) =>
  Object.fromEntries(
    Object.entries(s)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );

function without<K extends keyof NotifyState>(s: NotifyState, ...keys: K[]): NotifyState {
  const out = { ...s };
  for (const k of keys) delete out[k];
  return out;
}

/** The firing of the current incident, still held (not announced yet): nothing to renew at Alertmanager. */
const heldFiring = (s: NotifyState, atMs: number) =>
  s.outbox.some((n) => n.event === 'firing' && n.incident === s.incident && n.held && n.nextAtMs > atMs);

/**
 * A resolution whose incident's firing is still held (never sent): both are dropped, as if the incident
 * never happened (its receivers never heard of it). Undefined when n is not such a resolution.
 */
function cancelHeldFiring(s: NotifyState, n: QueuedNotification, atMs: number): NotifyState | undefined {
  if (n.event !== 'resolved') return undefined;
  const firing = s.outbox.find((e) => e.event === 'firing' && e.incident === n.incident);
  if (!firing?.held || firing.attempts > 0 || firing.nextAtMs <= atMs) return undefined;
  return { ...s, outbox: s.outbox.filter((e) => e.incident !== n.incident) };
}

/** The alert's own step (no flapping, no hold): OK → firing → resolved, reminders. */
function alertStep(
  s: NotifyState,
  facts: OutcomeFacts,
  policy: Policy,
  blocked: string[] | undefined,
): AlertStep {
  const none = (state: NotifyState, extra: Partial<AlertStep> = {}): AlertStep => ({
    state,
    transition: 'none',
    notices: [],
    ...extra,
  });
  if (facts.ok) {
    if (s.alert === 'ok') return none(without(s, 'sinceMs'));
    const successes = s.successes + 1;
    if (successes < policy.successThreshold) return none({ ...s, successes });
    const resolved: NotifyState = {
      ...without(s, 'incident', 'channels', 'severity', 'sinceMs', 'lastSentMs', 'quiet'),
      alert: 'ok',
      successes: 0,
    };
    const to = s.channels ?? policy.channels;
    const send = !s.quiet && policy.sendResolved && to.length > 0;
    return {
      state: resolved,
      transition: 'resolved',
      notices: send ? [notice('resolved', s, facts, to, policy)] : [],
    };
  }
  const sinceMs = s.sinceMs ?? facts.atMs;
  if (s.alert === 'ok') {
    if (facts.consecutiveFailures < policy.failureThreshold || policy.channels.length === 0)
      return none({ ...s, sinceMs });
    if (blocked) return none({ ...s, sinceMs }, { suppressed: 'blocked' });
    const firing: NotifyState = {
      ...s,
      alert: 'firing',
      incident: keyOf(facts.runUuid),
      channels: policy.channels,
      severity: policy.severity,
      sinceMs,
      successes: 0,
      lastSentMs: facts.atMs,
    };
    return {
      state: firing,
      transition: 'fired',
      notices: [notice('firing', firing, facts, policy.channels, policy)],
    };
  }
  const still: NotifyState = { ...s, sinceMs, successes: 0 };
  const to = s.channels ?? policy.channels;
  const due = policy.reminderMs > 0 && facts.atMs - (s.lastSentMs ?? sinceMs) >= policy.reminderMs;
  if (!due || to.length === 0 || s.quiet) return none(still);
  if (blocked) return none(still, { suppressed: 'blocked' });
  const reminded = { ...still, lastSentMs: facts.atMs };
  return {
    state: reminded,
    transition: 'reminded',
    notices: [notice('reminder', reminded, facts, to, policy)],
  };
}
