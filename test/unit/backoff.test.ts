import { describe, expect, it } from 'vitest';
import { API_OUTAGE_BACKOFF, Backoff, type BackoffPolicy } from '../../lib/core/backoff.ts';

const take = (backoff: Backoff, n: number) => Array.from({ length: n }, () => backoff.next());

describe('Backoff', () => {
  it.each<[string, BackoffPolicy, number[]]>([
    ['doubles up to the cap', { initialMs: 100, maxMs: 1_000 }, [100, 200, 400, 800, 1_000, 1_000]],
    ["the report paths' outage wait", API_OUTAGE_BACKOFF, [250, 500, 1_000, 2_000, 2_000, 2_000]],
    ['the transient retry default', { initialMs: 200, maxMs: 2_000 }, [200, 400, 800, 1_600, 2_000, 2_000]],
    ['a cap not on the doubling', { initialMs: 300, maxMs: 1_000 }, [300, 600, 1_000, 1_000, 1_000, 1_000]],
    [
      'a first delay above the cap is kept once',
      { initialMs: 5_000, maxMs: 1_000 },
      [5_000, 1_000, 1_000, 1_000, 1_000, 1_000],
    ],
  ])('%s', (_, policy, delays) => {
    expect(take(new Backoff(policy), delays.length)).toEqual(delays);
  });

  it('peek shows the next delay without taking it; reset starts over', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 1_000 });
    expect(take(backoff, 3)).toEqual([100, 200, 400]);
    expect(backoff.peek()).toBe(800);
    expect(backoff.peek()).toBe(800);
    backoff.reset();
    expect(take(backoff, 2)).toEqual([100, 200]);
  });
});
