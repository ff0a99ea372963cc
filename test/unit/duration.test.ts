import { describe, expect, it } from 'vitest';
import { formatGoDuration, formatMsAsGoDuration, parseGoDuration } from '../../lib/core/duration.ts';

// Every expected value below was produced by Go 1.26's time.ParseDuration / Duration.String().

describe('parseGoDuration accepts what Go accepts', () => {
  it.each([
    ['0', 0],
    ['+0', 0],
    ['-0', 0],
    ['0s', 0],
    ['-0s', 0],
    ['1ns', 1],
    ['1us', 1_000],
    ['1\u00b5s', 1_000], // micro sign
    ['1\u03bcs', 1_000], // Greek mu
    ['1ms', 1_000_000],
    ['1s', 1e9],
    ['1m', 60e9],
    ['1h', 3600e9],
    ['90s', 90e9],
    ['1h30m', 5400e9],
    ['2h45m', 9900e9],
    ['1.5h', 5400e9],
    ['-1.5h', -5400e9],
    ['+2s', 2e9],
    ['.5s', 500_000_000],
    ['1.s', 1e9],
    ['1.5µs', 1_500],
    ['1h1m1s1ms1us1ns', 3_661_001_001_001],
    ['1s1s', 2e9],
    ['0.000000001s', 1],
    ['0.0000000009s', 0], // the sub-nanosecond fraction is truncated
    ['1.0000000001h', 3_600_000_000_360], // Go's float64 step for fractions
    ['0.1234567890123456789012345678h', 444_444_440_444], // digits past uint64 precision are ignored
    ['22.512278967s', 22_512_278_967],
    ['0.9223372036854775808ns', 0],
    ['0.99999999999999993991m', 59_999_999_999], // a fraction's digits past 2^63 are not accumulated
  ])('%j is %d ns', (text, ns) => {
    expect(parseGoDuration(text)).toEqual({ ok: true, ns });
  });

  it.each([
    ['9223372036854775807ns', 9223372036854775807n],
    ['-9223372036854775808ns', -9223372036854775808n],
    ['2562047h47m16.854775807s', 9223372036854775807n],
    ['-2562047h47m16.854775808s', -9223372036854775808n],
    ['922337203685477580.9ns', 922337203685477580n],
  ])('%j is beyond 2^53 ns (compared as the nearest number)', (text, ns) => {
    expect(parseGoDuration(text)).toEqual({ ok: true, ns: Number(ns) });
  });
});

describe('parseGoDuration rejects what Go rejects, with Go`s message', () => {
  it.each([
    ['', 'time: invalid duration ""'],
    ['+', 'time: invalid duration "+"'],
    ['-', 'time: invalid duration "-"'],
    ['abc', 'time: invalid duration "abc"'],
    ['.', 'time: invalid duration "."'],
    ['.s', 'time: invalid duration ".s"'],
    ['-.s', 'time: invalid duration "-.s"'],
    [' 5m', 'time: invalid duration " 5m"'],
    ['--1s', 'time: invalid duration "--1s"'],
    ['+-1s', 'time: invalid duration "+-1s"'],
  ])('syntax: %j', (text, error) => {
    expect(parseGoDuration(text)).toEqual({ ok: false, error });
  });

  it.each([
    ['9223372036854775808ns', 'a positive 2^63'],
    ['99999999999999999999s', 'digits beyond uint64'],
    ['2562048h', 'the unit multiplication'],
    ['2562047h47m16.854775808s', 'the fraction'],
    ['9223372036854775807ns1ns', 'the sum of parts'],
    ['-9223372036854775808ns1ns', 'the sum of parts, negative'],
    ['-2562047h2562047h', 'the sum of parts, far beyond'],
    ['9223372036854775808.0ns', 'the whole part before a fraction'],
    ['99999999999999999999', 'digits beyond uint64, before the missing unit'],
    ['99999999999999999999d', 'digits beyond uint64, before the unknown unit'],
    ['2562048h1d', 'a part, before the next part is read'],
  ])('overflow: %j (%s)', (text) => {
    expect(parseGoDuration(text)).toEqual({ ok: false, error: `time: invalid duration "${text}"` });
  });

  it.each([
    ['10', 'time: missing unit in duration "10"'],
    ['1.5', 'time: missing unit in duration "1.5"'],
    ['1h30', 'time: missing unit in duration "1h30"'],
  ])('missing unit: %j', (text, error) => {
    expect(parseGoDuration(text)).toEqual({ ok: false, error });
  });

  it.each([
    ['1d', 'time: unknown unit "d" in duration "1d"'],
    ['1S', 'time: unknown unit "S" in duration "1S"'],
    ['1sec', 'time: unknown unit "sec" in duration "1sec"'],
    ['5 min', 'time: unknown unit " min" in duration "5 min"'],
    ['5m ', 'time: unknown unit "m " in duration "5m "'],
    // 2^63 passes each per-part check; only the final int64 check would reject it
    ['9223372036854775808ns1d', 'time: unknown unit "d" in duration "9223372036854775808ns1d"'],
    // Go's quote writes non-ASCII and control characters as UTF-8 byte escapes.
    ['1\u00b5', 'time: unknown unit "\\xc2\\xb5" in duration "1\\xc2\\xb5"'],
    ['1\u212as', 'time: unknown unit "\\xe2\\x84\\xaas" in duration "1\\xe2\\x84\\xaas"'],
    ['1\ns', 'time: unknown unit "\\x0as" in duration "1\\x0as"'],
    ['1"s', 'time: unknown unit "\\"s" in duration "1\\"s"'],
    ['1\\s', 'time: unknown unit "\\\\s" in duration "1\\\\s"'],
  ])('unknown unit: %j', (text, error) => {
    expect(parseGoDuration(text)).toEqual({ ok: false, error });
  });
});

describe('formatGoDuration matches Duration.String()', () => {
  it.each([
    [0, '0s'],
    [1, '1ns'],
    [999, '999ns'],
    [1_000, '1µs'],
    [1_500, '1.5µs'],
    [-1_500, '-1.5µs'],
    [1_000_000, '1ms'],
    [1_500_000, '1.5ms'],
    [500_000_000, '500ms'],
    [999_999_999, '999.999999ms'],
    [1e9, '1s'],
    [1_000_000_001, '1.000000001s'],
    [-2e9, '-2s'],
    [22_512_278_967, '22.512278967s'],
    [60e9, '1m0s'],
    [90e9, '1m30s'],
    [3600e9, '1h0m0s'],
    [3601e9, '1h0m1s'],
    [86_400e9, '24h0m0s'],
    [9_007_199_254_740_991, '2501h59m59.254740991s'],
    [Number(-9223372036854775808n), '-2562047h47m16.854775808s'],
  ])('%d ns is %j', (ns, text) => {
    expect(formatGoDuration(ns)).toBe(text);
  });

  it('saturates beyond int64 and truncates fractions, like Go conversions', () => {
    expect(formatGoDuration(1e19)).toBe('2562047h47m16.854775807s');
    expect(formatGoDuration(1.9)).toBe('1ns');
    expect(formatGoDuration(-1.9)).toBe('-1ns');
  });

  it('throws on a non-finite input, which can only be a bug', () => {
    expect(() => formatGoDuration(Number.NaN)).toThrow(RangeError);
    expect(() => formatGoDuration(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });

  it.each([
    [0, '0s'],
    [22_512.278967, '22.512278967s'],
    [0.0000004, '0s'],
    [0.0000006, '1ns'],
    [90_000, '1m30s'],
    [1.5, '1.5ms'],
  ])('formatMsAsGoDuration(%d) is %j', (ms, text) => {
    expect(formatMsAsGoDuration(ms)).toBe(text);
  });

  it('round-trips through parseGoDuration', () => {
    for (const ns of [1, 1_500, 999_999_999, 22_512_278_967, 5_400e9, -7_261_000_000_123]) {
      expect(parseGoDuration(formatGoDuration(ns))).toEqual({ ok: true, ns });
    }
  });
});
