import { describe, expect, it } from 'vitest';
import { decideBlocking, parseDependsOn, resolveParents } from '../../lib/notify/dependencies.ts';
import { parseFlapping } from '../../lib/notify/flapping.ts';
import { BUILTIN_POLICY, type Policy } from '../../lib/notify/policy.ts';
import { decideTransition, needsPolicy, type OutcomeFacts } from '../../lib/notify/transition.ts';
import type { NotifyState } from '../../lib/state/notify-state.ts';

// Flapping (item 6) and dependencies (item 5), as the pure decision takes them.

const T0 = Date.UTC(2026, 11, 3, 10, 0, 0);
const MIN = 60_000;
const policy = (p: Partial<Policy> = {}): Policy => ({
  ...BUILTIN_POLICY,
  channels: ['hook'],
  failureThreshold: 1,
  ...p,
});
let n = 0;

/** Outcomes every stepMs: F failure, S success; `blocked` marks the steps a failing parent blocks. */
function play(
  outcomes: string,
  p: Policy,
  opts: { stepMs?: number; blocked?: string; start?: NotifyState } = {},
) {
  let state = opts.start;
  let failures = 0;
  const queued: string[] = [];
  const suppressed: string[] = [];
  outcomes.split('').forEach((o, i) => {
    failures = o === 'F' ? failures + 1 : 0;
    const f: OutcomeFacts = {
      kind: 'khcheck',
      outcome: o === 'F' ? 'Failed' : 'Succeeded',
      ok: o === 'S',
      skipped: false,
      runUuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
      atMs: T0 + i * (opts.stepMs ?? 5 * MIN),
      consecutiveFailures: failures,
      runIntervalMs: 5 * MIN,
    };
    const blockedBy = opts.blocked?.[i] === 'B' ? ['khcheck team/db'] : undefined;
    const d = decideTransition(
      state,
      f,
      needsPolicy(state, f) ? p : undefined,
      blockedBy ? { blockedBy } : {},
    );
    for (const q of d.queued) queued.push(`${i}:${q.event}${q.alert ? `(${q.alert})` : ''}`);
    if (d.suppressed) suppressed.push(`${i}:${d.suppressed}`);
    state = d.state;
  });
  return { state, queued, suppressed };
}

describe('flapping', () => {
  const flapping = parseFlapping('4 in 1h');
  if (!flapping.ok) throw new Error(flapping.want);
  const p = policy({ flapping: flapping.value });

  it('the 4th transition within the window becomes one flapping notice, the rest send nothing', () => {
    const r = play('FSFSFSFS', p);
    expect(r.queued).toEqual(['0:firing', '1:resolved', '2:firing', '3:flapping']);
    expect(r.suppressed).toEqual(['4:flapping', '5:flapping', '6:flapping', '7:flapping']);
    expect(r.state?.flapping).toMatchObject({ windowMs: 60 * MIN, announced: expect.any(Object) });
  });

  it('settles once a whole window passes without a transition, and brings the receivers in line', () => {
    // Flapping starts at step 3 (a resolution: the receivers still know the firing of step 2); it keeps
    // failing from step 4 on, and settles an hour after its last transition (step 4) at step 16.
    const r = play(`FSFSF${'F'.repeat(12)}`, p);
    expect(r.queued).toEqual([
      '0:firing',
      '1:resolved',
      '2:firing',
      '3:flapping',
      '16:settled(firing)',
      '16:resolved',
      '16:firing',
    ]);
    expect(r.state?.flapping).toBeUndefined();
    expect(r.state?.alert).toBe('firing');
  });

  it('settling OK resolves the incident the receivers knew as firing', () => {
    const r = play(`FSFS${'S'.repeat(13)}`, p);
    expect(r.queued.slice(3)).toEqual(['3:flapping', '15:settled(ok)', '15:resolved']);
  });

  it('transitions spread wider than the window never flap', () => {
    expect(play('FSFSFS', p, { stepMs: 30 * MIN }).queued).toEqual([
      '0:firing',
      '1:resolved',
      '2:firing',
      '3:resolved',
      '4:firing',
      '5:resolved',
    ]);
  });

  it('is read as "K in DURATION" or off', () => {
    expect(parseFlapping('6 in 30m')).toEqual({ ok: true, value: { transitions: 6, windowMs: 30 * MIN } });
    expect(parseFlapping('off')).toEqual({ ok: true, value: null });
    expect(parseFlapping('1 in 1h').ok).toBe(false);
    expect(parseFlapping('6 per hour').ok).toBe(false);
  });
});

describe('dependencies', () => {
  it('a failing child blocked by a failing parent does not fire; it fires once the parent is no longer failing', () => {
    const r = play('FFFF', policy({ failureThreshold: 2 }), { blocked: 'BBB.' });
    expect(r.suppressed).toEqual(['1:blocked', '2:blocked']);
    expect(r.queued).toEqual(['3:firing']);
    expect(r.state?.blocked).toBeUndefined();
  });

  it('records the parent on a blocked failure, and no reminder goes out while blocked', () => {
    const fired = play('F', policy({ reminderMs: 5 * MIN })).state;
    const r = play('FF', policy({ reminderMs: 5 * MIN }), { blocked: 'BB', start: fired });
    expect(r.queued).toEqual([]);
    expect(r.state?.blocked).toEqual({ by: ['khcheck team/db'], atMs: T0 + 5 * MIN });
  });

  it('parses [KIND:][NAMESPACE/]NAME and resolves it against the child', () => {
    const r = parseDependsOn('db, kube-system/dns, healthcheck:web/api');
    if (!r.ok) throw new Error(r.want);
    expect(resolveParents(r.value, { kind: 'khjob', namespace: 'team', name: 'job' })).toEqual([
      { kind: 'khcheck', namespace: 'team', name: 'db' },
      { kind: 'khcheck', namespace: 'kube-system', name: 'dns' },
      { kind: 'healthcheck', namespace: 'web', name: 'api' },
    ]);
    expect(resolveParents(r.value, { kind: 'khcheck', namespace: 'team', name: 'db' })).toHaveLength(2);
    expect(parseDependsOn('Bad Name').ok).toBe(false);
    expect(parseDependsOn('a,b,c,d,e,f').ok).toBe(false);
  });

  const parent = (name: string) => ({ kind: 'khcheck' as const, namespace: 'team', name });

  it('blocks by the first failing parent and its own chain; missing or unreadable parents are problems', () => {
    const b = decideBlocking('khcheck team/app', [
      { parent: parent('gone'), view: null },
      { parent: parent('ok'), view: { failing: false } },
      { parent: parent('denied'), view: new Error('forbidden') },
      {
        parent: parent('db'),
        view: {
          failing: true,
          notify: { alert: 'ok', successes: 0, outbox: [], blocked: { by: ['khcheck team/net'], atMs: 0 } },
        },
      },
    ]);
    expect(b.by).toEqual(['khcheck team/db', 'khcheck team/net']);
    expect(b.problems).toEqual([
      'khcheck team/app depends on khcheck team/gone, which has no state (it does not exist, or never ran): not taken into account',
      'khcheck team/app depends on khcheck team/denied, which cannot be read (forbidden): not taken into account',
    ]);
  });

  it('a cycle blocks nothing and is named: of two checks that depend on each other, the first to fail notifies', () => {
    const b = decideBlocking('khcheck team/a', [
      {
        parent: parent('b'),
        view: {
          failing: true,
          notify: { alert: 'ok', successes: 0, outbox: [], blocked: { by: ['khcheck team/a'], atMs: 0 } },
        },
      },
    ]);
    expect(b.by).toBeUndefined();
    expect(b.problems).toEqual([
      "dependency cycle: khcheck team/a → khcheck team/b → khcheck team/a: khcheck team/b does not hold back khcheck team/a's notifications",
    ]);
  });
});
