/**
 * Go's `time.ParseDuration` and `time.Duration.String()`, reproduced bit for bit.
 *
 * khcheck YAMLs written for Kuberhealthy v2 hold Go duration strings, and khstate readers (dashboards, v2's
 * status page) expect `RunDuration` in Go's format, so "close enough" is not enough: every string Go accepts
 * must parse to the same nanoseconds and every string Go rejects must be rejected here. The arithmetic runs
 * on BigInt because Go works in uint64/int64; the result is returned as a `number`, which is exact up to
 * 2^53 ns (about 104 days) and rounds beyond that.
 */

export type ParsedGoDuration = { ok: true; ns: number } | { ok: false; error: string };

const UINT63 = 1n << 63n;
const INT64_MAX = UINT63 - 1n;

const NS_PER_UNIT: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek small letter mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const utf8 = new TextEncoder();

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/**
 * Go's `time.quote`: printable ASCII kept (with `"` and `\` escaped), every byte of any other character
 * written as `\xNN` of its UTF-8 encoding, so error texts match Go's byte for byte.
 */
function goQuote(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code < 0x20 || code >= 0x80) {
      for (const byte of utf8.encode(ch)) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    } else {
      out += ch === '"' || ch === '\\' ? `\\${ch}` : ch;
    }
  }
  return `${out}"`;
}

/**
 * Go's `leadingInt`: null on overflow past 2^63, which Go reports as an invalid duration. (Go also checks
 * before multiplying, to stop uint64 wrapping; BigInt cannot wrap, so the check after is enough.)
 */
function leadingInt(s: string): { value: bigint; rest: string } | null {
  let value = 0n;
  let i = 0;
  for (; isDigit(s[i]); i++) {
    value = value * 10n + BigInt(s.charCodeAt(i) - 48);
    if (value > UINT63) return null;
  }
  return { value, rest: s.slice(i) };
}

/** Go's `leadingFraction`: past uint64 precision it keeps consuming digits but stops accumulating them. */
function leadingFraction(s: string): { value: bigint; scale: number; rest: string } {
  let value = 0n;
  let scale = 1;
  let overflow = false;
  let i = 0;
  for (; isDigit(s[i]); i++) {
    if (overflow) continue;
    const next = value * 10n + BigInt(s.charCodeAt(i) - 48);
    if (next > UINT63) {
      overflow = true;
      continue;
    }
    value = next;
    scale *= 10;
  }
  return { value, scale, rest: s.slice(i) };
}

/**
 * Parses `text` exactly as Go's `time.ParseDuration` does: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or a bare `0`.
 * Errors carry Go's own message, e.g. `time: unknown unit "d" in duration "1d"`.
 */
export function parseGoDuration(text: string): ParsedGoDuration {
  const invalid = (message: string): ParsedGoDuration => ({
    ok: false,
    error: `time: ${message} ${goQuote(text)}`,
  });
  let s = text;
  let negative = false;
  if (s[0] === '-' || s[0] === '+') {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return { ok: true, ns: 0 };
  if (s === '') return invalid('invalid duration');

  let total = 0n;
  while (s !== '') {
    if (!(s[0] === '.' || isDigit(s[0]))) return invalid('invalid duration');

    const whole = leadingInt(s);
    if (whole === null) return invalid('invalid duration');
    const hadWholeDigits = whole.rest.length !== s.length;
    s = whole.rest;

    let fraction = 0n;
    let scale = 1;
    let hadFractionDigits = false;
    if (s[0] === '.') {
      const parsed = leadingFraction(s.slice(1));
      hadFractionDigits = parsed.rest.length !== s.length - 1;
      ({ value: fraction, scale } = parsed);
      s = parsed.rest;
    }
    // ".s" and "-.s" have no digits at all.
    if (!hadWholeDigits && !hadFractionDigits) return invalid('invalid duration');

    let unitEnd = 0;
    while (unitEnd < s.length && !(s[unitEnd] === '.' || isDigit(s[unitEnd]))) unitEnd++;
    if (unitEnd === 0) return invalid('missing unit in duration');
    const unitName = s.slice(0, unitEnd);
    s = s.slice(unitEnd);
    const unit = NS_PER_UNIT[unitName];
    if (unit === undefined) return invalid(`unknown unit ${goQuote(unitName)} in duration`);

    // Go computes the fraction's term in float64 and truncates it; doing the same keeps e.g.
    // "1.0000000001h" identical to the nanosecond.
    const fractionNs = fraction > 0n ? BigInt(Math.trunc(Number(fraction) * (Number(unit) / scale))) : 0n;
    total += whole.value * unit + fractionNs;
    // Go checks the product, the fraction and the sum separately because uint64 wraps; BigInt does not,
    // so one check per part gives the same verdict at the same point (before later parts are read).
    if (total > UINT63) return invalid('invalid duration');
  }
  if (negative) return { ok: true, ns: Number(-total) };
  if (total > INT64_MAX) return invalid('invalid duration');
  return { ok: true, ns: Number(total) };
}

/** Go's `fmtFrac`: `value / 10^digits` with its fraction appended, trailing zeros (and a bare ".") dropped. */
function withFraction(value: bigint, digits: number): { integer: bigint; fraction: string } {
  let fraction = '';
  let rest = value;
  for (let i = 0; i < digits; i++) {
    const digit = rest % 10n;
    if (fraction !== '' || digit !== 0n) fraction = `${digit}${fraction}`;
    rest /= 10n;
  }
  return { integer: rest, fraction: fraction === '' ? '' : `.${fraction}` };
}

/**
 * Formats nanoseconds exactly as Go's `time.Duration.String()`: `0s`, `1.5µs`, `500ms`, `1m30s`, `1h0m0s`.
 * A fractional input is truncated toward zero and values beyond int64 saturate, as Go's conversions and
 * `time.Since` do; a non-finite input is a programming error and throws.
 */
export function formatGoDuration(ns: number): string {
  if (!Number.isFinite(ns)) throw new RangeError(`formatGoDuration: not a finite number of ns: ${ns}`);
  let signed = BigInt(Math.trunc(ns));
  if (signed > INT64_MAX) signed = INT64_MAX;
  if (signed < -UINT63) signed = -UINT63;
  const sign = signed < 0n ? '-' : '';
  const magnitude = signed < 0n ? -signed : signed;

  if (magnitude === 0n) return '0s';
  if (magnitude < 1_000_000_000n) {
    // Below a second Go switches to the largest unit that keeps the leading digit non-zero.
    const digits = magnitude < 1_000n ? 0 : magnitude < 1_000_000n ? 3 : 6;
    const unit = digits === 0 ? 'ns' : digits === 3 ? 'µs' : 'ms';
    const { integer, fraction } = withFraction(magnitude, digits);
    return `${sign}${integer}${fraction}${unit}`;
  }
  const { integer: seconds, fraction } = withFraction(magnitude, 9);
  const minutes = seconds / 60n;
  const hours = minutes / 60n;
  let out = `${seconds % 60n}${fraction}s`;
  // Go stops at hours because days vary in length; it prints inner zero units ("1h0m0s").
  if (minutes > 0n) out = `${minutes % 60n}m${out}`;
  if (hours > 0n) out = `${hours}h${out}`;
  return `${sign}${out}`;
}

/** `formatGoDuration` for a millisecond count (e.g. a measured run time), rounded to whole nanoseconds. */
export function formatMsAsGoDuration(ms: number): string {
  return formatGoDuration(Math.round(ms * 1e6));
}
