import { describe, expect, it } from 'vitest';
import { DEFAULT_FINISHED_JOB_TTL, finishedJobTtlSeconds } from '../../lib/schedule/job-retention.ts';

describe('finishedJobTtlSeconds: finished runner Jobs stay about one interval, 2 to 10 minutes', () => {
  it.each([
    ['a 10 s interval: the floor, time to read the log', 10_000, 120],
    ['1 minute', 60_000, 120],
    ['2 minutes', 120_000, 120],
    ['5 minutes: one interval', 300_000, 300],
    ['an interval not in whole seconds, rounded up', 299_001, 300],
    ['10 minutes: one interval', 600_000, 600],
    ['an hour: the cap', 3_600_000, 600],
    ['a day: the cap', 86_400_000, 600],
    ['no interval (a khjob runs once): the cap', undefined, 600],
  ])('%s', (_, intervalMs, seconds) => {
    expect(finishedJobTtlSeconds(intervalMs, DEFAULT_FINISHED_JOB_TTL)).toBe(seconds);
  });

  it('takes its bounds from the options', () => {
    expect(finishedJobTtlSeconds(60_000, { minSeconds: 30, maxSeconds: 45 })).toBe(45);
    expect(finishedJobTtlSeconds(10_000, { minSeconds: 30, maxSeconds: 45 })).toBe(30);
  });

  it('never keeps a check more than about two finished Jobs at steady state, nor fewer than its last', () => {
    for (const intervalMs of [10_000, 60_000, 90_000, 300_000, 600_000, 3_600_000]) {
      const ttlMs = finishedJobTtlSeconds(intervalMs, DEFAULT_FINISHED_JOB_TTL) * 1000;
      // Runs finish once per interval; each stays ttl: on average ttl / interval finished Jobs at a time.
      const kept = ttlMs / intervalMs;
      expect(kept).toBeLessThanOrEqual(12);
      if (intervalMs >= DEFAULT_FINISHED_JOB_TTL.minSeconds * 1000) expect(kept).toBeLessThanOrEqual(1);
      expect(ttlMs).toBeGreaterThanOrEqual(DEFAULT_FINISHED_JOB_TTL.minSeconds * 1000);
    }
  });
});
