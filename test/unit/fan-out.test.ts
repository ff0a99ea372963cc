import { describe, expect, it } from 'vitest';
import { ClusterDeadlineError, fanOut, reasonOf } from '../../lib/core/fan-out.ts';

/** A promise settled from outside, and whether its signal was aborted. */
function pending<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('fanOut: one outcome per cluster, none held back by another', () => {
  it('returns each value or reason in the order given, whatever order they settle in', async () => {
    const b = pending<string>();
    const run = fanOut(
      ['a', 'b', 'c'],
      async (cluster) => {
        if (cluster === 'b') return b.promise;
        if (cluster === 'c') throw new Error('connection refused\n  at somewhere');
        return 'A';
      },
      { concurrency: 3, deadlineMs: 5_000 },
    );
    b.resolve('B');
    const outcomes = await run;
    expect(outcomes.map((o) => o.cluster)).toEqual(['a', 'b', 'c']);
    expect(outcomes[0]).toMatchObject({ ok: true, value: 'A' });
    expect(outcomes[1]).toMatchObject({ ok: true, value: 'B' });
    expect(outcomes[2]).toMatchObject({
      ok: false,
      timedOut: false,
      reason: 'connection refused at somewhere',
    });
  });

  it('settles a cluster that ignores its signal at its deadline, and aborts that signal', async () => {
    let seen: AbortSignal | undefined;
    const started = performance.now();
    const [hung, fine] = await fanOut(
      ['hung', 'fine'],
      (cluster, signal) => {
        if (cluster === 'fine') return Promise.resolve(1);
        seen = signal;
        return new Promise<number>(() => {});
      },
      { concurrency: 2, deadlineMs: 50 },
    );
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(fine).toMatchObject({ ok: true, value: 1 });
    expect(hung).toMatchObject({ ok: false, timedOut: true });
    expect(hung?.ok === false && hung.reason).toBe("no result within 0.1s (the cluster's deadline)");
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toBeInstanceOf(ClusterDeadlineError);
  });

  it('runs at most `concurrency` clusters at once; a cluster waiting its turn has not started its deadline', async () => {
    let active = 0;
    let most = 0;
    const outcomes = await fanOut(
      ['a', 'b', 'c', 'd', 'e'],
      async () => {
        active++;
        most = Math.max(most, active);
        await new Promise((r) => setTimeout(r, 30));
        active--;
        return true;
      },
      { concurrency: 2, deadlineMs: 50 },
    );
    expect(most).toBe(2);
    // Five clusters of 30 ms two at a time take ~90 ms, more than one deadline: none timed out.
    expect(outcomes.every((o) => o.ok)).toBe(true);
  });

  it('aborts every cluster with the caller signal, each settled as failed at once', async () => {
    const stop = new AbortController();
    const run = fanOut(['a', 'b'], () => new Promise<number>(() => {}), {
      concurrency: 2,
      deadlineMs: 60_000,
      signal: stop.signal,
    });
    stop.abort(new Error('received SIGTERM'));
    const outcomes = await run;
    expect(outcomes).toMatchObject([
      { ok: false, timedOut: false, reason: 'received SIGTERM' },
      { ok: false, timedOut: false, reason: 'received SIGTERM' },
    ]);
  });

  it('reasonOf: one line, never empty', () => {
    expect(reasonOf(new Error('a\n b'))).toBe('a b');
    expect(reasonOf(new TypeError(''))).toBe('TypeError');
    expect(reasonOf('plain')).toBe('plain');
  });
});
