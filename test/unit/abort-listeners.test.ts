import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { abortableDelay } from '../../lib/core/abort.ts';
import { retryWithBackoff } from '../../lib/core/backoff.ts';
import { retryTransient } from '../../lib/kube/transient.ts';

// The long-running parts (khrun serve, a runner waiting out an API outage, the kubelet) pass one signal
// for their whole life into the waits below, many times over. Each wait must take its abort listener
// away when it ends, or they pile up on that signal (Node warns at 11: MaxListenersExceededWarning), one
// more per retry, for as long as the process lives.

const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);
beforeAll(() => {
  process.on('warning', onWarning);
});
afterAll(() => {
  process.off('warning', onWarning);
});

const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

describe('waits on a long-lived signal leave no abort listener behind', () => {
  it('abortableDelay, 50 times in a row on one signal', async () => {
    const life = new AbortController();
    for (let i = 0; i < 50; i++) await abortableDelay(0, life.signal);
    expect(listeners(life.signal)).toBe(0);
  });

  it('retryWithBackoff through 30 failed attempts on one signal', async () => {
    const life = new AbortController();
    let attempts = 0;
    const seen: number[] = [];
    const value = await retryWithBackoff(
      'the thirty-first attempt',
      async () => {
        seen.push(listeners(life.signal));
        if (++attempts <= 30) throw new Error('connect ECONNREFUSED');
        return 'up';
      },
      { initialMs: 0, maxMs: 0, deadlineEpochMs: Date.now() + 60_000, signal: life.signal },
    );
    expect(value).toBe('up');
    expect(seen).toEqual(Array(31).fill(0));
    expect(listeners(life.signal)).toBe(0);
  });

  it('retryTransient through 30 transient failures on one signal', async () => {
    const life = new AbortController();
    let attempts = 0;
    const value = await retryTransient(
      async () => {
        if (++attempts <= 30) throw Object.assign(new Error('Too Many Requests'), { statusCode: 429 });
        return 'stored';
      },
      { initialMs: 0, maxMs: 0, totalMs: 60_000, signal: life.signal },
    );
    expect(value).toBe('stored');
    expect(listeners(life.signal)).toBe(0);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
