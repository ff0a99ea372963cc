import { describe, expect, it } from 'vitest';
import { crashLoopMessage, nextBackoffMs, shouldRestart } from '../src/local/kubelet/restart.ts';

describe('shouldRestart', () => {
  it.each([
    ['Never', 0, false, false],
    ['Never', 1, false, false],
    ['OnFailure', 0, false, false],
    ['OnFailure', 1, false, true],
    ['Always', 0, false, true],
    ['Always', 1, false, true],
    [undefined, 0, false, true],
    ['Always', 0, true, false],
    ['Always', 2, true, true],
    ['Never', 2, true, false],
  ] as const)('policy %s, exit %i, init %s → %s', (policy, exitCode, isInit, expected) => {
    expect(shouldRestart(policy, exitCode, isInit)).toBe(expected);
  });
});

describe('nextBackoffMs', () => {
  const backoff = { initialMs: 500, maxMs: 4_000 };
  it('doubles per crash up to the cap', () => {
    const delays: number[] = [];
    let delay: number | undefined;
    for (let i = 0; i < 6; i++) {
      delay = nextBackoffMs(delay, 10, backoff);
      delays.push(delay);
    }
    expect(delays).toEqual([500, 1000, 2000, 4000, 4000, 4000]);
  });

  it('starts over after a run that lasted twice the cap', () => {
    expect(nextBackoffMs(4000, 8_001, backoff)).toBe(500);
  });

  it('writes the kubelet message', () => {
    expect(crashLoopMessage(2000, 'main', { name: 'p', namespace: 'ns', uid: 'u' })).toBe(
      'back-off 2s restarting failed container=main pod=p_ns(u)',
    );
  });
});
