import { describe, expect, it } from 'vitest';
import {
  boundsOf,
  estimateOffset,
  keepBounds,
  type OffsetBounds,
  parseHttpDate,
  serverNowMs,
} from '../../lib/core/server-time.ts';

// Server time 1_700_000_000_000 + x at monotonic x + OFFSET_MS's counterpart: the server's clock reads
// monotonic time plus OFFSET_MS exactly. Samples are what its Date headers would say.
const OFFSET_MS = 1_700_000_000_000 - 12_345.6;
const serverAt = (monoMs: number) => monoMs + OFFSET_MS;
/** A response whose Date was written at monotonic writtenAtMs, in flight from sent to received. */
const sample = (sentMonoMs: number, writtenAtMs: number, receivedMonoMs: number) => ({
  sentMonoMs,
  receivedMonoMs,
  serverDateMs: Math.floor(serverAt(writtenAtMs) / 1000) * 1000,
});

describe('boundsOf', () => {
  it('brackets the true offset by the Date resolution and the round trip', () => {
    const b = boundsOf(sample(100, 103, 106));
    expect(b.loMs).toBeLessThanOrEqual(OFFSET_MS);
    expect(b.hiMs).toBeGreaterThanOrEqual(OFFSET_MS);
    expect(b.hiMs - b.loMs).toBe(1000 + 6);
  });
});

describe('estimateOffset', () => {
  it('is undefined without a response', () => {
    expect(estimateOffset([])).toBeUndefined();
  });

  it('one response: within half a second and half the round trip', () => {
    const e = estimateOffset([boundsOf(sample(100, 103, 106))]);
    expect(e?.uncertaintyMs).toBe(503);
    expect(Math.abs((e?.offsetMs ?? 0) - OFFSET_MS)).toBeLessThanOrEqual(503);
  });

  it('responses across a second boundary pin the offset to a round trip', () => {
    // Requests every 100 ms for 1.2 s: one of them sees the server's second change.
    const bounds: OffsetBounds[] = [];
    for (let t = 0; t <= 1200; t += 100) bounds.unshift(boundsOf(sample(t, t + 2, t + 4)));
    const e = estimateOffset(bounds);
    expect(e?.samples).toBe(13);
    expect(e?.uncertaintyMs).toBeLessThanOrEqual(52);
    expect(Math.abs((e?.offsetMs ?? 0) - OFFSET_MS)).toBeLessThanOrEqual(e?.uncertaintyMs ?? 0);
  });

  it('after the server clock is stepped, the newest responses win over the older ones', () => {
    const before = boundsOf(sample(0, 2, 4));
    const stepped = (monoMs: number) => ({
      sentMonoMs: monoMs,
      receivedMonoMs: monoMs + 4,
      serverDateMs: Math.floor((serverAt(monoMs + 2) + 60_000) / 1000) * 1000,
    });
    const e = estimateOffset([boundsOf(stepped(2_000)), before]);
    expect(e?.samples).toBe(1);
    expect(Math.abs((e?.offsetMs ?? 0) - (OFFSET_MS + 60_000))).toBeLessThanOrEqual(502);
  });
});

describe('keepBounds', () => {
  it('keeps the newest first, at most maxKept, none older than maxAgeMs', () => {
    let kept: OffsetBounds[] = [];
    for (let t = 0; t < 10; t++)
      kept = keepBounds(kept, { loMs: 0, hiMs: 1, atMonoMs: t * 1000 }, { maxKept: 4, maxAgeMs: 2_500 });
    expect(kept.map((b) => b.atMonoMs)).toEqual([9000, 8000, 7000]);
  });
});

describe('serverNowMs', () => {
  const estimate = { offsetMs: 1_000_000, uncertaintyMs: 400, samples: 2 };
  it('is the local wall clock while it lies within the bounds', () => {
    expect(serverNowMs(estimate, 50, 1_000_050 + 399)).toBe(1_000_050 + 399);
    expect(serverNowMs(estimate, 50, 1_000_050 - 400)).toBe(1_000_050 - 400);
  });
  it('is the estimate when the local clock lies outside them', () => {
    expect(serverNowMs(estimate, 50, 1_000_050 + 401)).toBe(1_000_050);
    expect(serverNowMs({ ...estimate, offsetMs: 1_000_000.75 }, 50.5, 0)).toBe(1_000_051);
    expect(serverNowMs(estimate, 50, 1_000_050 - 300_000)).toBe(1_000_050);
  });
});

describe('parseHttpDate', () => {
  it('reads an IMF-fixdate; nothing else', () => {
    expect(parseHttpDate('Tue, 01 Dec 2026 08:36:41 GMT')).toBe(Date.UTC(2026, 11, 1, 8, 36, 41));
    expect(parseHttpDate(undefined)).toBeUndefined();
    expect(parseHttpDate('')).toBeUndefined();
    expect(parseHttpDate('yesterday')).toBeUndefined();
  });
});
