import { describe, expect, it } from 'vitest';
import { billedGbSeconds } from '../bench/lambda-billing.ts';
import { summarize } from '../bench/stats.ts';

describe('Lambda billing arithmetic of the benchmark', () => {
  it('rounds the duration up to the millisecond and multiplies by the memory in GB', () => {
    expect(billedGbSeconds(1000, 512)).toBe(0.5);
    expect(billedGbSeconds(1000.2, 512)).toBe(0.5005);
    expect(billedGbSeconds(60_000, 1024)).toBe(60);
    expect(billedGbSeconds(0.1, 128)).toBe(0.000125);
  });
});

describe('benchmark summaries', () => {
  it('gives p95 only from 20 samples up, and always n, median, min, max and the spread', () => {
    const few = summarize([5, 1, 3]);
    expect(few).toEqual({ n: 3, median: 3, min: 1, max: 5, iqr: 2 });
    expect('p95' in few).toBe(false);
    const many = summarize(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(many.n).toBe(20);
    expect(many.p95).toBeCloseTo(19.05);
  });
});
