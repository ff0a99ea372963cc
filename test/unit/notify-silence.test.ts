import { describe, expect, it } from 'vitest';
import { parseCron } from '../../lib/core/cron-expression.ts';
import { holdAt } from '../../lib/notify/hold.ts';
import { parseMaintenance, windowEndMs } from '../../lib/notify/maintenance.ts';
import { BUILTIN_POLICY, type Policy } from '../../lib/notify/policy.ts';
import { formatSilence, parseSilence } from '../../lib/notify/silence.ts';
import { decideTransition, needsPolicy, type OutcomeFacts } from '../../lib/notify/transition.ts';
import type { NotifyState } from '../../lib/state/notify-state.ts';

// Silences and maintenance windows (issue 25, item 4): what holds a check's notifications, and what the
// pure decision does with a transition while one holds and when it ends.

const T0 = Date.UTC(2026, 11, 3, 10, 0, 0); // a Thursday
const MIN = 60_000;
const HOUR = 60 * MIN;

describe('cron expressions', () => {
  it.each([
    ['0 2 * * SUN', true],
    ['*/15 9-17 * * MON-FRI', true],
    ['0 0 1,15 JAN-MAR *', true],
    ['0 2 * *', false],
    ['61 * * * *', false],
    ['0 2 * * FOO', false],
    ['5-1 * * * *', false],
  ])('%s parses: %s', (text, ok) => {
    expect(parseCron(text).ok).toBe(ok);
  });

  it('names the field it cannot read', () => {
    const r = parseCron('0 25 * * *');
    expect(r.ok || r.error).toContain('the hour field of "0 25 * * *" cannot be read: "25" (hour: 0-23)');
  });
});

describe('maintenance windows', () => {
  const one = (text: string) => {
    const r = parseMaintenance(text);
    if (!r.ok) throw new Error(r.want);
    return r.value;
  };

  it('is open from its cron time for its duration, in its time zone (Berlin: UTC+1 in December)', () => {
    const [w] = one('0 11 * * THU for 2h in Europe/Berlin');
    if (!w) throw new Error('no window');
    // 11:00 Berlin = 10:00 UTC on Thursday 2026-12-03.
    expect(windowEndMs(w, T0 - MIN)).toBeUndefined();
    expect(windowEndMs(w, T0)).toBe(T0 + 2 * HOUR);
    expect(windowEndMs(w, T0 + 2 * HOUR - 1)).toBe(T0 + 2 * HOUR);
    expect(windowEndMs(w, T0 + 2 * HOUR)).toBeUndefined();
  });

  it('follows daylight saving time: the same local hour is another UTC hour in summer', () => {
    const [w] = one('0 11 * * * for 1h in Europe/Berlin');
    if (!w) throw new Error('no window');
    const july = Date.UTC(2026, 6, 2, 9, 30); // 11:30 Berlin (UTC+2)
    expect(windowEndMs(w, july)).toBe(Date.UTC(2026, 6, 2, 10, 0));
    expect(windowEndMs(w, Date.UTC(2026, 6, 2, 10, 30))).toBeUndefined();
  });

  it('takes several windows separated by ";" and refuses what it cannot use, saying what to write', () => {
    expect(one('0 2 * * SUN for 2h; 30 23 * * * for 15m in America/New_York')).toHaveLength(2);
    for (const bad of ['0 2 * * SUN', '0 2 * * SUN for 9d', '0 2 * * SUN for 2h in Mars/Olympus'])
      expect(parseMaintenance(bad)).toMatchObject({
        ok: false,
        want: expect.stringContaining('CRON for DURATION'),
      });
  });
});

describe('silences', () => {
  it('reads what `khrun silence` writes, and a bare time', () => {
    const text = formatSilence({ untilMs: T0 + HOUR, reason: 'db migration', by: 'alice', atMs: T0 });
    expect(parseSilence(text)).toEqual({
      ok: true,
      value: { untilMs: T0 + HOUR, reason: 'db migration', by: 'alice', atMs: T0 },
    });
    expect(parseSilence('2026-12-03T11:00:00Z')).toEqual({ ok: true, value: { untilMs: T0 + HOUR } });
    expect(parseSilence('tomorrow').ok).toBe(false);
  });

  it('holds until the silence ends, or a window open then extends it', () => {
    const maintenance = parseMaintenance('0 11 * * * for 1h');
    if (!maintenance.ok) throw new Error(maintenance.want);
    const silence = { untilMs: T0 + HOUR, reason: 'upgrade' };
    expect(holdAt({ silence, maintenance: [] }, T0)).toEqual({
      untilMs: T0 + HOUR,
      source: 'silence',
      reason: 'upgrade',
    });
    expect(holdAt({ silence, maintenance: maintenance.value }, T0)?.untilMs).toBe(T0 + 2 * HOUR);
    expect(holdAt({ silence, maintenance: [] }, T0 + HOUR)).toBeUndefined();
  });
});

const policy = (p: Partial<Policy> = {}): Policy => ({
  ...BUILTIN_POLICY,
  channels: ['hook'],
  failureThreshold: 1,
  ...p,
});
let n = 0;
const facts = (ok: boolean, atMs: number, failures: number): OutcomeFacts => ({
  kind: 'khcheck',
  outcome: ok ? 'Succeeded' : 'Failed',
  ok,
  skipped: false,
  ...(ok ? {} : { error: 'down' }),
  runUuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
  atMs,
  consecutiveFailures: failures,
  runIntervalMs: 10 * MIN,
});

/** Outcomes every 10 min from T0 (F, S); the hold applies while atMs < holdUntil. */
function play(outcomes: string, p: Policy, holdUntilMs: number, start?: NotifyState) {
  let state = start;
  let failures = 0;
  const steps: Array<{ queued: string[]; state: NotifyState | undefined }> = [];
  outcomes.split('').forEach((o, i) => {
    failures = o === 'F' ? failures + 1 : 0;
    const f = facts(o === 'S', T0 + i * 10 * MIN, failures);
    const hold = f.atMs < holdUntilMs ? { untilMs: holdUntilMs, source: 'silence' as const } : undefined;
    const d = decideTransition(state, f, needsPolicy(state, f) ? p : undefined, hold ? { hold } : {});
    state = d.state;
    steps.push({ queued: d.queued.map((q) => `${q.event}${q.held ? '@held' : ''}`), state });
  });
  return steps;
}

describe('a transition during a silence', () => {
  it('after-silence notify: the firing is held until the silence ends, then due', () => {
    const steps = play('FFF', policy(), T0 + 15 * MIN);
    expect(steps[0]?.queued).toEqual(['firing@held']);
    const [held] = steps[0]?.state?.outbox ?? [];
    expect(held).toMatchObject({ event: 'firing', held: true, nextAtMs: T0 + 15 * MIN });
    expect(steps[0]?.state?.hold).toEqual({ untilMs: T0 + 15 * MIN, source: 'silence' });
    // After the silence, the hold record is gone and the entry is due (the sweep or the next run sends it).
    expect(steps[2]?.state?.hold).toBeUndefined();
    expect(steps[2]?.state?.outbox.map((e) => e.nextAtMs <= T0 + 20 * MIN)).toEqual([true]);
  });

  it('after-silence notify: a firing that resolved during the silence is dropped with its resolution', () => {
    const steps = play('FFS', policy(), T0 + HOUR);
    expect(steps[2]?.queued).toEqual([]);
    expect(steps[2]?.state?.outbox ?? []).toEqual([]);
    expect(steps[2]?.state?.alert).toBe('ok');
  });

  it('after-silence drop: nothing of an incident that fired during it is ever sent', () => {
    const steps = play('FFFFS', policy({ afterSilence: 'drop', reminderMs: 10 * MIN }), T0 + 15 * MIN);
    expect(steps.flatMap((s) => s.queued)).toEqual([]);
    expect(steps[1]?.state).toMatchObject({ alert: 'firing', quiet: true });
    expect(steps[4]?.state?.quiet).toBeUndefined();
  });

  it('after-silence drop: the resolution of an incident announced before the silence is still sent, when it ends', () => {
    const fired = play('F', policy({ afterSilence: 'drop' }), 0)[0]?.state;
    const delivered = fired && { ...fired, outbox: [] };
    const steps = play('S', policy({ afterSilence: 'drop' }), T0 + HOUR, delivered);
    expect(steps[0]?.queued).toEqual(['resolved@held']);
  });

  it('a silence removed early releases what it held at the next decision', () => {
    const first = play('F', policy(), T0 + HOUR)[0]?.state;
    const steps = play('FF', policy(), 0, first);
    expect(steps[1]?.state?.outbox[0]?.nextAtMs).toBeLessThanOrEqual(T0 + 10 * MIN);
  });
});
