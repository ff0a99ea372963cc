import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { billedGbSeconds, configuredMemoryMb } from '../bench/lambda-billing.ts';
import { summarize } from '../bench/stats.ts';

describe('Lambda billing arithmetic of the benchmark', () => {
  it('rounds the duration up to the millisecond and multiplies by the memory in GB', () => {
    expect(billedGbSeconds(1000, 512)).toBe(0.5);
    expect(billedGbSeconds(1000.2, 512)).toBe(0.5005);
    expect(billedGbSeconds(60_000, 1024)).toBe(60);
    expect(billedGbSeconds(0.1, 128)).toBe(0.000125);
  });

  it("reads a function's memorySize, else the provider's, through CloudFormation tags", () => {
    const text = [
      'provider: { memorySize: 512 }',
      'functions:',
      '  a: { handler: x, environment: { U: !Join ["", [!GetAtt B.Arn, x]] } }',
      '  b: { handler: y, memorySize: 256, role: !Ref R }',
    ].join('\n');
    expect(configuredMemoryMb(text, 'a')).toBe(512);
    expect(configuredMemoryMb(text, 'b')).toBe(256);
    expect(() => configuredMemoryMb(text, 'c')).toThrow(/no function c/);
  });

  it("reads runCheck's memory from the shipped serverless.yml", () => {
    const text = readFileSync(join(import.meta.dirname, '../../serverless.yml'), 'utf8');
    expect(configuredMemoryMb(text, 'runCheck')).toBeGreaterThan(0);
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
