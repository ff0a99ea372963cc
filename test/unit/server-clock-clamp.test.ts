import { describe, expect, it } from 'vitest';
import { serverClock } from '../../lib/kube/server-clock.ts';

// The clamp that keeps the API server's time as read here from going back: a response that tightens the
// estimate may move it back by up to the Date header's resolution (a second), and that is held until the
// monotonic clock has caught up; a larger step back is the server's clock being set back, and is taken.
//
// The scripted machine: the local wall clock is 5 minutes ahead (so the estimate, not the wall clock, is
// read), the first response took 2 s (`Date` = D: offset in [D − 2 s, D + 1 s], midpoint D − 0.5 s), and a
// second response sent and received at monotonic `atMonoMs` that still says D narrows the offset to
// [max(D − 2 s, D − atMonoMs), D + 1 s − atMonoMs]: time read then drops by exactly what the table says.

const D = Date.UTC(2026, 11, 1, 8, 0, 0);
const SKEW_MS = 5 * 60_000;

function machine() {
  let monoMs = 0;
  const clock = serverClock({ monoMs: () => monoMs, wallMs: () => D + monoMs + SKEW_MS });
  clock.observe({ sentMonoMs: 0, receivedMonoMs: 2_000, date: new Date(D).toUTCString() });
  return {
    clock,
    at: (ms: number) => {
      monoMs = ms;
    },
    /** A zero-round-trip response at the current monotonic time whose Date still says D. */
    tighten: () =>
      clock.observe({ sentMonoMs: monoMs, receivedMonoMs: monoMs, date: new Date(D).toUTCString() }),
  };
}

describe('serverClock never reads time backwards', () => {
  it.each([
    { name: 'by less than a second: held', atMonoMs: 1_500, backMs: 500, held: true },
    { name: 'by exactly a second (the Date resolution): held', atMonoMs: 2_000, backMs: 1_000, held: true },
    {
      name: 'by more than a second (the server clock was set back): taken',
      atMonoMs: 2_001,
      backMs: 1_001,
      held: false,
    },
  ])('a refined estimate that moves time back $name', ({ atMonoMs, backMs, held }) => {
    // Prepare: time read just before the tightening response.
    const m = machine();
    m.at(atMonoMs);
    const before = m.clock.nowMs();
    // Act
    m.tighten();
    const after = m.clock.nowMs();
    // Assess
    expect(before).toBe(D + atMonoMs - 500);
    expect(after).toBe(held ? before : before - backMs);
  });

  it('holds the last time read until the monotonic clock has caught up, then advances with it again', () => {
    // Prepare: a step back of 500 ms at monotonic 1.5 s, held at D + 1 s.
    const m = machine();
    m.at(1_500);
    const held = m.clock.nowMs();
    m.tighten();
    // Act
    m.at(1_900);
    const stillHeld = m.clock.nowMs();
    m.at(2_100);
    const resumed = m.clock.nowMs();
    // Assess: the new estimate (offset D − 1 s) is behind the held D + 1 s at 1.9 s, and ahead at 2.1 s.
    expect(stillHeld).toBe(held);
    expect(resumed).toBe(held + 100);
  });
});
