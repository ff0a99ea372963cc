import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, retryAfterMs, retryTransient } from '../../lib/kube/transient.ts';

// retryTransient with a scripted clock and sleep: which errors are tried again, for how long, and how long
// each wait is. The errors are shaped as client-node's (a code and the response's headers).

const answer = (code: number, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`HTTP ${code}`), { statusCode: code, headers });

function scripted(errors: unknown[]) {
  let nowMs = 0;
  const waits: number[] = [];
  let calls = 0;
  const run = (opts: Parameters<typeof retryTransient>[1] = {}) =>
    retryTransient(
      async () => {
        calls++;
        const next = errors.shift();
        if (next) throw next;
        return 'done';
      },
      {
        now: () => nowMs,
        random: () => 0.5,
        sleep: async (ms) => {
          waits.push(ms);
          nowMs += ms;
        },
        ...opts,
      },
    );
  return { run, waits, calls: () => calls, nowMs: () => nowMs };
}

describe('retryAfterMs', () => {
  it('reads whole seconds, capped', () => {
    expect(retryAfterMs(answer(429, { 'retry-after': '1' }))).toBe(1_000);
    expect(retryAfterMs(answer(429, { 'Retry-After': '4' }))).toBe(4_000);
    expect(retryAfterMs(answer(429, { 'retry-after': '3600' }))).toBe(MAX_RETRY_AFTER_MS);
  });

  it('ignores what it cannot read without comparing clocks', () => {
    expect(retryAfterMs(answer(429, { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' }))).toBeUndefined();
    expect(retryAfterMs(answer(429, { 'retry-after': '-1' }))).toBeUndefined();
    expect(retryAfterMs(answer(429))).toBeUndefined();
    expect(retryAfterMs(new Error('no headers'))).toBeUndefined();
    expect(retryAfterMs(null)).toBeUndefined();
  });
});

describe('retryTransient', () => {
  it('waits at least what Retry-After asks', async () => {
    const s = scripted([answer(429, { 'retry-after': '2' }), answer(429, { 'retry-after': '1' })]);
    expect(await s.run({ initialMs: 200 })).toBe('done');
    expect(s.waits).toEqual([2_250, 1_125]); // random 0.5: stretched by an eighth
    const t = scripted([answer(429, { 'retry-after': '2' })]);
    await t.run({ initialMs: 200, random: () => 0 });
    expect(t.waits).toEqual([2_000]);
  });

  it('jitters its backoff between half and all of it, doubling up to maxMs', async () => {
    const s = scripted([answer(503), answer(503), answer(503), answer(503)]);
    await s.run({ initialMs: 200, maxMs: 800, random: () => 0 });
    expect(s.waits).toEqual([100, 200, 400, 400]);
    const t = scripted([answer(503), answer(503)]);
    await t.run({ initialMs: 200, random: () => 0.999999 });
    expect(t.waits[0]).toBeCloseTo(200, 3);
    expect(t.waits[1]).toBeCloseTo(400, 3);
  });

  it('keeps trying 429s for throttledMs, past totalMs', async () => {
    const s = scripted(Array.from({ length: 100 }, () => answer(429, { 'retry-after': '1' })));
    await expect(
      s.run({ totalMs: 5_000, throttledMs: 20_000, initialMs: 100, maxMs: 1_000, random: () => 0 }),
    ).rejects.toThrow('HTTP 429');
    expect(s.nowMs()).toBe(20_000);
    expect(s.calls()).toBe(21);
  });

  it('gives up on 5xx after totalMs even with a longer throttledMs', async () => {
    const s = scripted(Array.from({ length: 100 }, () => answer(504)));
    await expect(s.run({ totalMs: 5_000, throttledMs: 20_000, maxMs: 1_000 })).rejects.toThrow('HTTP 504');
    expect(s.nowMs()).toBe(5_000);
  });

  it('without throttledMs, a 429 has totalMs like any other', async () => {
    const s = scripted(Array.from({ length: 100 }, () => answer(429, { 'retry-after': '1' })));
    await expect(s.run({ totalMs: 3_000, random: () => 0 })).rejects.toThrow('HTTP 429');
    expect(s.nowMs()).toBe(3_000);
  });

  it('does not try again what is not transient', async () => {
    const s = scripted([answer(403)]);
    await expect(s.run()).rejects.toThrow('HTTP 403');
    expect(s.calls()).toBe(1);
  });
});
