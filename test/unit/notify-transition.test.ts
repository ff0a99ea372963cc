import { describe, expect, it } from 'vitest';
import { BUILTIN_POLICY, type Policy } from '../../lib/notify/policy.ts';
import { decideTransition, keyOf, needsPolicy, type OutcomeFacts } from '../../lib/notify/transition.ts';
import type { NotifyState } from '../../lib/state/notify-state.ts';

// The pure decision: an outcome, the alert's state and the policy → the next state and at most one
// notification. Every row starts from a state and feeds outcomes in order; what each step queued is listed.

const T0 = Date.UTC(2026, 11, 3, 10, 0, 0);
const MIN = 60_000;
const policy = (p: Partial<Policy> = {}): Policy => ({ ...BUILTIN_POLICY, channels: ['hook'], ...p });

let n = 0;
const uuid = () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;

/** A run of outcomes: F failure, S success, K skipped; the streak counts as the khstate would. */
function play(outcomes: string, p: Policy, start?: NotifyState, stepMs = 10 * MIN) {
  let state = start;
  let failures = 0;
  const queued: string[] = [];
  outcomes.split('').forEach((o, i) => {
    if (o === 'F') failures++;
    else if (o === 'S') failures = 0;
    const facts: OutcomeFacts = {
      kind: 'khcheck',
      outcome: o === 'F' ? 'Failed' : o === 'K' ? 'Skipped' : 'Succeeded',
      ok: o !== 'F',
      skipped: o === 'K',
      ...(o === 'F' ? { error: 'dns lookup failed' } : {}),
      runUuid: uuid(),
      atMs: T0 + i * stepMs,
      consecutiveFailures: failures,
      runIntervalMs: 10 * MIN,
    };
    const d = decideTransition(state, facts, needsPolicy(state, facts) ? p : undefined);
    for (const q of d.queued) queued.push(`${i}:${q.event}`);
    state = d.state;
  });
  return { state, queued };
}

describe('decideTransition', () => {
  it.each([
    ['fires once after 3 consecutive failures', 'FFFFFF', {}, ['2:firing']],
    ['a success in between restarts the count', 'FFSFFSFFF', {}, ['8:firing']],
    ['resolves after one success (default), and sends it', 'FFFS', {}, ['2:firing', '3:resolved']],
    [
      'resolves only after 2 successes with success-threshold 2',
      'FFFSFSS',
      { successThreshold: 2 },
      ['2:firing', '6:resolved'],
    ],
    ['does not send the resolution with send-resolved false', 'FFFSS', { sendResolved: false }, ['2:firing']],
    [
      'fires at once with failure-threshold 1',
      'FSF',
      { failureThreshold: 1 },
      ['0:firing', '1:resolved', '2:firing'],
    ],
    ['a skipped run changes nothing', 'FFKFK', {}, ['3:firing']],
    [
      'reminds every 30 min while failing',
      'FFFFFFFFF',
      { reminderMs: 30 * MIN },
      ['2:firing', '5:reminder', '8:reminder'],
    ],
    ['no channels: never fires', 'FFFFF', { channels: [] }, []],
    ['all successes: nothing, ever', 'SSSS', {}, []],
  ])('%s', (_, outcomes, p, want) => {
    expect(play(outcomes, policy(p)).queued).toEqual(want);
  });

  it('writes no notify state for a healthy check (the outcome write is as without notifications)', () => {
    expect(play('SSS', policy()).state).toBeUndefined();
  });

  it('needs no policy for a success of an alert that is not firing (no namespace defaults read)', () => {
    expect(needsPolicy(undefined, { ok: true, skipped: false })).toBe(false);
    expect(needsPolicy({ alert: 'ok', successes: 0, outbox: [] }, { ok: true, skipped: false })).toBe(false);
    expect(needsPolicy({ alert: 'firing', successes: 0, outbox: [] }, { ok: true, skipped: false })).toBe(
      true,
    );
    expect(needsPolicy(undefined, { ok: false, skipped: false })).toBe(true);
    expect(needsPolicy(undefined, { ok: false, skipped: true })).toBe(false);
  });

  it('keys the notification by run and event, and the incident by the run that fired it', () => {
    n = 100;
    const { state } = play('FFFS', policy());
    const [firing, resolved] = state?.outbox ?? [];
    expect(firing?.id).toBe(`${keyOf('00000000-0000-4000-8000-000000000103')}-firing`);
    expect(firing?.incident).toBe(keyOf('00000000-0000-4000-8000-000000000103'));
    expect(resolved?.incident).toBe(firing?.incident);
    expect(resolved?.id).toBe(`${keyOf('00000000-0000-4000-8000-000000000104')}-resolved`);
    // The run UUID itself (a report credential) is never in it: only its 8-character prefix.
    expect(JSON.stringify(state)).not.toContain('00000000-0000-4000-8000-000000000103');
    expect(firing).toMatchObject({ run: '00000000', failures: 3, sinceMs: T0, error: 'dns lookup failed' });
  });

  it('sends the resolution and reminders to the channels the incident fired on, with its severity', () => {
    const fired = play('FFF', policy({ channels: ['a', 'b'], severity: 'critical' })).state;
    const later = play('FFS', policy({ channels: ['c'], severity: 'info' }), fired).state;
    const resolved = later?.outbox.at(-1);
    expect(resolved).toMatchObject({ event: 'resolved', channels: ['a', 'b'], severity: 'critical' });
    expect(later).toMatchObject({ alert: 'ok' });
    expect(later?.incident).toBeUndefined();
  });

  it('asks for a renewal at Alertmanager on a failing run of a firing alert that queued nothing', () => {
    const fired = play('FFF', policy()).state;
    const d = decideTransition(
      fired,
      {
        kind: 'khcheck',
        outcome: 'Failed',
        ok: false,
        skipped: false,
        runUuid: uuid(),
        atMs: T0 + 40 * MIN,
        consecutiveFailures: 4,
        runIntervalMs: 10 * MIN,
      },
      policy(),
    );
    expect(d).toMatchObject({ transition: 'none', renew: true });
  });

  it('leases what it queues, and the due older entries, to the writing invocation', () => {
    const fired = play('FFF', policy()).state as NotifyState;
    // The firing's holder died: its lease lapsed. The resolving write takes both.
    const stale = {
      ...fired,
      outbox: fired.outbox.map((e) => ({ ...e, lease: { holder: 'dead', untilMs: T0 } })),
    };
    const d = decideTransition(
      stale,
      {
        kind: 'khcheck',
        outcome: 'Succeeded',
        ok: true,
        skipped: false,
        runUuid: uuid(),
        atMs: T0 + 30 * MIN,
        consecutiveFailures: 0,
        runIntervalMs: 10 * MIN,
      },
      policy(),
      { lease: { holder: 'me', untilMs: T0 + 31 * MIN } },
    );
    expect(d.state?.outbox.map((e) => [e.event, e.lease?.holder])).toEqual([
      ['firing', 'me'],
      ['resolved', 'me'],
    ]);
  });
});
