import type { QueuedNotification } from '../state/notify-state.ts';
import type { Hold } from './hold.ts';
import type { AlertStep, OutcomeFacts } from './notice.ts';
import type { Policy } from './policy.ts';

/**
 * A silence or maintenance window over the step, pure. after-silence notify: every notice waits in the
 * outbox until the hold ends (held, nextAtMs its end). drop: an incident that fires during it is quiet
 * (neither its firing nor its reminders nor its resolution are ever sent), flapping notices are not sent;
 * only the resolution of an incident announced before it still goes out, when it ends.
 */
export function holdStep(
  step: AlertStep,
  facts: OutcomeFacts,
  policy: Policy,
  hold: Hold | undefined,
): AlertStep {
  if (!hold || step.notices.length === 0) return step;
  const heldUntil = (n: QueuedNotification): QueuedNotification => ({
    ...n,
    held: true,
    nextAtMs: Math.max(hold.untilMs, facts.atMs),
  });
  if (policy.afterSilence === 'notify') return { ...step, notices: step.notices.map(heldUntil) };
  let state = step.state;
  const notices: QueuedNotification[] = [];
  for (const n of step.notices) {
    if (n.event === 'resolved') notices.push(heldUntil(n));
    else if (n.event === 'firing' && state.incident === n.incident) state = { ...state, quiet: true };
  }
  return {
    ...step,
    state,
    notices,
    ...(notices.length < step.notices.length ? { suppressed: 'silenced' as const } : {}),
  };
}

/**
 * Held entries follow the hold as it is now: a silence extended keeps them longer, one removed (or ended
 * early) lets them go at once.
 */
export function rehold(
  outbox: QueuedNotification[],
  hold: Hold | undefined,
  nowMs: number,
): QueuedNotification[] {
  if (!outbox.some((n) => n.held)) return outbox;
  return outbox.map((n) => {
    if (!n.held) return n;
    const nextAtMs = hold ? Math.max(n.nextAtMs, hold.untilMs) : Math.min(n.nextAtMs, nowMs);
    return nextAtMs === n.nextAtMs ? n : { ...n, nextAtMs };
  });
}
