import { describe, expect, it } from 'vitest';
import { DEFAULT_DUE_TIMINGS, decideDue, stableFraction } from '../../lib/schedule/due.ts';
import { DISPATCH_ANNOTATION } from '../../lib/state/dispatch-claim.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

// The due time itself is due: a tick that reads exactly the due millisecond sends the check. One
// millisecond before, the check is not yet due, and the decision names the due time as the next look.

const MIN = 60_000;
const T0 = Date.parse('2026-01-01T12:00:00Z');
const INTERVAL_MS = 5 * MIN;
/** Half a tick early (30 s), as the interval is longer than two ticks. */
const EARLY_MS = DEFAULT_DUE_TIMINGS.tickPeriodMs / 2;

function state(annotations: Record<string, unknown>): KhState {
  const s = newKhState('c', 'ns');
  s.metadata.annotations = Object.fromEntries(
    Object.entries(annotations).map(([k, v]) => [k, JSON.stringify(v)]),
  );
  return s;
}
const outcome = (startedAtMs: number) => ({
  [ANNOTATION.outcome]: {
    uuid: 'u0',
    kind: 'Succeeded',
    startedAtMs,
    finishedAtMs: startedAtMs + 5_000,
    durationMs: 5_000,
  },
});
const dispatched = (atMs: number) => ({ [DISPATCH_ANNOTATION]: { atMs, ref: 'job-1', by: 'tick-a' } });

const KEY = 'uid-1';
const firstJitterMs = Math.floor(
  stableFraction(KEY) * Math.min(INTERVAL_MS / 4, DEFAULT_DUE_TIMINGS.maxFirstRunJitterMs),
);

describe('decideDue at the due time', () => {
  it.each([
    {
      name: 'a check that ran: its last start + interval − half a tick',
      s: state(outcome(T0)),
      dueMs: T0 + INTERVAL_MS - EARLY_MS,
      reason: 'interval-passed',
    },
    {
      name: 'a check whose dispatch led to its last run: that dispatch + interval − half a tick',
      s: state({ ...dispatched(T0), ...outcome(T0 + 40_000) }),
      dueMs: T0 + INTERVAL_MS - EARLY_MS,
      reason: 'interval-passed',
    },
    {
      name: 'a check that never ran: its creation + its stable jitter',
      s: null,
      dueMs: T0 + firstJitterMs,
      reason: 'never-run',
    },
  ])('$name', ({ s, dueMs, reason }) => {
    // Prepare
    const input = { key: KEY, runIntervalMs: INTERVAL_MS, createdAtMs: T0, state: s };
    // Act
    const before = decideDue({ ...input, nowMs: dueMs - 1 });
    const at = decideDue({ ...input, nowMs: dueMs });
    // Assess
    expect(before).toEqual({ due: false, reason: 'not-yet', nextCheckMs: dueMs });
    expect(at).toEqual({ due: true, reason });
  });

  it('the never-run jitter of the key used here is not zero, so creation itself is not yet due', () => {
    expect(firstJitterMs).toBeGreaterThan(0);
    expect(
      decideDue({ key: KEY, runIntervalMs: INTERVAL_MS, createdAtMs: T0, state: null, nowMs: T0 }),
    ).toMatchObject({ due: false, reason: 'not-yet' });
  });
});
