import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS, timerScheduler } from '../../lib/core/scheduler.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('timerScheduler', () => {
  it.each([
    { name: 'a delay setTimeout honours', delayMs: 1_500, timerMs: 1_500 },
    { name: 'exactly 2^31-1 ms', delayMs: 2 ** 31 - 1, timerMs: 2 ** 31 - 1 },
    // setTimeout would fire a 40-day timer at once; capped, the callback runs after ~24.8 days and re-checks.
    { name: '40 days, capped', delayMs: 40 * 86_400_000, timerMs: MAX_TIMER_MS },
    { name: 'a negative delay, as 0', delayMs: -20, timerMs: 0 },
  ])('asks setTimeout for $name', ({ delayMs, timerMs }) => {
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const cancel = timerScheduler.schedule(() => {}, delayMs);
    expect(setTimeoutSpy).toHaveBeenCalledTimes(1);
    expect(setTimeoutSpy.mock.calls[0]?.[1]).toBe(timerMs);
    cancel();
  });

  it('runs the callback, unless cancelled first', async () => {
    const ran: string[] = [];
    const cancelled = timerScheduler.schedule(() => ran.push('cancelled'), 0);
    cancelled();
    await new Promise<void>((resolve) => timerScheduler.schedule(resolve, 0));
    expect(ran).toEqual([]);
    // Cancelling after the callback ran does nothing.
    cancelled();
  });
});
