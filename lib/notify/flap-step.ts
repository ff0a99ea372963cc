import type { NotifyState, QueuedNotification } from '../state/notify-state.ts';
import { flipsWithin } from './flapping.ts';
import { type AlertStep, keyOf, notice, type OutcomeFacts, renewMsOf } from './notice.ts';
import type { Policy } from './policy.ts';

/**
 * Flapping over the alert's step, pure. Each transition (fired, resolved) is counted; the policy's count
 * within its window starts flapping: that transition's notice is replaced by one "flapping" notice, and
 * later transitions (and reminders) send nothing while the alert keeps changing underneath. Once a whole
 * window passes without a transition it settles: a "settled" notice, plus whatever brings the receivers
 * in line with the alert now (the resolution of the incident they knew as firing, the firing of one they
 * never heard of). Flapping turned off while flapping settles at once.
 */
export function flapStep(
  step: AlertStep,
  before: NotifyState,
  facts: OutcomeFacts,
  policy: Policy,
): AlertStep {
  const p = policy.flapping;
  const s = step.state;
  const flip = step.transition === 'fired' || step.transition === 'resolved';
  if (!p) {
    const cleared = { ...step, state: { ...s } };
    delete cleared.state.flips;
    return s.flapping ? settle(cleared, facts) : cleared;
  }
  if (!flip) {
    if (s.flapping && facts.atMs - s.flapping.lastMs >= s.flapping.windowMs) return settle(step, facts);
    if (s.flapping && step.notices.length) return { ...step, notices: [], suppressed: 'flapping' };
    return step;
  }
  const flips = flipsWithin(s.flips, facts.atMs, p);
  if (s.flapping)
    return {
      state: { ...s, flips, flapping: { ...s.flapping, lastMs: facts.atMs } },
      transition: step.transition,
      notices: [],
      suppressed: 'flapping',
    };
  if (flips.length < p.transitions) return { ...step, state: { ...s, flips } };
  const announced =
    before.alert === 'firing' && !before.quiet && before.incident
      ? {
          incident: before.incident,
          channels: before.channels ?? policy.channels,
          severity: before.severity ?? policy.severity,
        }
      : undefined;
  const channels = announced?.channels ?? policy.channels;
  const flapping = {
    incident: keyOf(`${facts.runUuid}/flapping`),
    sinceMs: flips[0] ?? facts.atMs,
    lastMs: facts.atMs,
    windowMs: p.windowMs,
    channels,
    severity: announced?.severity ?? policy.severity,
    ...(announced ? { announced } : {}),
  };
  const n = notice(
    'flapping',
    { incident: flapping.incident, severity: flapping.severity, sinceMs: flapping.sinceMs },
    facts,
    channels,
    policy,
    {
      flaps: flips.length,
      windowMs: p.windowMs,
      renewMs: p.windowMs + renewMsOf(facts.runIntervalMs),
    },
  );
  return { state: { ...s, flips, flapping }, transition: 'flapping', notices: channels.length ? [n] : [] };
}

function settle(step: AlertStep, facts: OutcomeFacts): AlertStep {
  const s = step.state;
  const f = s.flapping;
  if (!f) return step;
  const state: NotifyState = { ...s };
  delete state.flapping;
  delete state.flips;
  const firingNow = state.alert === 'firing' && !state.quiet ? state.incident : undefined;
  const notices: QueuedNotification[] = [];
  const severity = { severity: f.severity };
  if (f.channels.length)
    notices.push(
      notice(
        'settled',
        { incident: f.incident, severity: f.severity, sinceMs: f.sinceMs },
        facts,
        f.channels,
        severity,
        {
          alert: firingNow ? 'firing' : 'ok',
          windowMs: f.windowMs,
        },
      ),
    );
  if (f.announced && f.announced.incident !== firingNow)
    notices.push(
      notice(
        'resolved',
        { incident: f.announced.incident, severity: f.announced.severity, sinceMs: f.sinceMs },
        facts,
        f.announced.channels,
        severity,
        {
          id: `${keyOf(facts.runUuid)}-resolved-${f.announced.incident.slice(0, 8)}`,
        },
      ),
    );
  if (firingNow && firingNow !== f.announced?.incident && state.channels?.length)
    notices.push(notice('firing', state, facts, state.channels, severity));
  return { state, transition: 'settled', notices };
}
