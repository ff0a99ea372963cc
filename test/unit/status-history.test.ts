import { describe, expect, it } from 'vitest';
import { truncateChars, truncateUtf8 } from '../../lib/core/text.ts';
import {
  appendHistory,
  HISTORY_ANNOTATION,
  type HistoryEntry,
  parseHistory,
  readHistory,
} from '../../lib/state/history.ts';
import { type ActiveRun, ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { RunOutcome } from '../../lib/state/outcome.ts';
import { recordOutcome } from '../../lib/state/record.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { addOutcome, bucketOf, emptyTotals, parseTotals, readTotals } from '../../lib/state/totals.ts';

const T0 = Date.UTC(2024, 2, 5, 10, 20, 30);
const entry = (i: number, extra: Partial<HistoryEntry> = {}): HistoryEntry => ({
  atMs: T0 + i * 1000,
  kind: 'Succeeded',
  ok: true,
  durationMs: 1000 + i,
  ...extra,
});
const fill = (n: number, bounds?: Parameters<typeof appendHistory>[2], extra: Partial<HistoryEntry> = {}) => {
  let text: string | undefined;
  for (let i = 0; i < n; i++) text = appendHistory(text, entry(i, extra), bounds);
  return text ?? '[]';
};

describe('appendHistory', () => {
  it('keeps the newest entries, oldest first, up to maxEntries', () => {
    const entries = parseHistory(fill(25, { maxEntries: 5, maxBytes: 100_000, maxErrorChars: 50 }));
    expect(entries.map((e) => e.durationMs)).toEqual([1020, 1021, 1022, 1023, 1024]);
  });

  it('keeps the annotation within maxBytes by dropping the oldest entries', () => {
    const error = 'x'.repeat(150);
    const bounds = { maxEntries: 100, maxBytes: 1_000, maxErrorChars: 200 };
    const text = fill(40, bounds, { ok: false, kind: 'Failed', error });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(1_000);
    const entries = parseHistory(text);
    expect(entries.length).toBeGreaterThan(1);
    expect(entries.at(-1)?.durationMs).toBe(1039);
    // The next entry would not have fitted: the bound is tight, not merely respected.
    expect(Buffer.byteLength(JSON.stringify([entry(0, { error }), ...entries]))).toBeGreaterThan(1_000);
  });

  it('counts bytes, not characters, for multi-byte errors', () => {
    const bounds = { maxEntries: 100, maxBytes: 2_000, maxErrorChars: 100 };
    const text = fill(50, bounds, { ok: false, kind: 'Failed', error: '😀'.repeat(100) });
    expect(Buffer.byteLength(text, 'utf8')).toBeLessThanOrEqual(2_000);
    for (const e of parseHistory(text)) expect(Array.from(e.error ?? '')).toHaveLength(100);
  });

  it('truncates the first error to maxErrorChars code points with a marker', () => {
    const text = appendHistory(
      undefined,
      entry(0, { ok: false, kind: 'Failed', error: `${'ab'.repeat(300)}` }),
    );
    expect(parseHistory(text)[0]?.error).toBe(`${'ab'.repeat(100).slice(0, 199)}…`);
  });

  it('always keeps the newest entry, shortening or dropping its error to fit a tiny bound', () => {
    const tiny = { maxEntries: 10, maxBytes: 120, maxErrorChars: 1_000 };
    const text = appendHistory(
      fill(3, tiny),
      entry(9, { ok: false, kind: 'Failed', error: 'e'.repeat(500) }),
      tiny,
    );
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(120);
    const [only, ...rest] = parseHistory(text);
    expect(rest).toEqual([]);
    expect(only).toMatchObject({ atMs: T0 + 9000, kind: 'Failed', ok: false });
    expect(only?.error?.endsWith('…')).toBe(true);
  });

  it.each([
    ['not json', 'not json'],
    ['an object', '{"atMs":1}'],
    ['entries of the wrong shape', '[{"atMs":"x"},{"kind":"Failed"},null,3]'],
  ])('starts over from a damaged annotation (%s)', (_, damaged) => {
    expect(parseHistory(damaged)).toEqual([]);
    expect(parseHistory(appendHistory(damaged, entry(1)))).toEqual([entry(1)]);
  });
});

describe('recordOutcome appends history and totals in the same write', () => {
  const RUN: ActiveRun = {
    uuid: 'u1',
    startedAtMs: T0,
    deadlineMs: T0 + 60_000,
    pod: 'p',
    runner: 'r',
    leaseUntilMs: T0 + 30_000,
  };
  const claimed = (): KhState => {
    const state = newKhState('dns', 'checks');
    state.metadata.annotations = { [ANNOTATION.run]: JSON.stringify(RUN) };
    return state;
  };
  const failed: RunOutcome = {
    kind: 'Failed',
    ok: false,
    errors: ['', 'disk full\non /data'],
    node: 'n',
    durationMs: 2_500,
  };

  it('records time, outcome, duration and the first non-blank error', () => {
    const next = recordOutcome(claimed(), RUN, failed, {
      nowMs: T0 + 3_000,
      runner: 'r',
      runIntervalMs: 600_000,
    });
    expect(readHistory(next)).toEqual([
      { atMs: T0 + 3_000, kind: 'Failed', ok: false, durationMs: 2_500, error: 'disk full\non /data' },
    ]);
    expect(readTotals(next)).toMatchObject({
      failed: 1,
      succeeded: 0,
      runIntervalMs: 600_000,
      durationSumSeconds: 2.5,
    });
  });

  it('notes a skipped run in the history without touching the result', () => {
    const skipped: RunOutcome = {
      kind: 'Skipped',
      ok: true,
      errors: [],
      node: '',
      durationMs: 100,
      note: 'pod deleted',
    };
    const next = recordOutcome(claimed(), RUN, skipped, { nowMs: T0 + 1_000, runner: 'r' });
    expect(readHistory(next)).toEqual([{ atMs: T0 + 1_000, kind: 'Skipped', ok: true, durationMs: 100 }]);
    expect(readTotals(next)).toMatchObject({ skipped: 1, durationSumSeconds: 0 });
    expect(next.spec).toEqual({ ...claimed().spec, LastRun: null });
  });

  it('grows the history by one per outcome and stays bounded', () => {
    let state = claimed();
    for (let i = 0; i < 30; i++) {
      state = recordOutcome(state, RUN, { ...failed, durationMs: i }, { nowMs: T0 + i, runner: 'r' });
      state.metadata.annotations = { ...state.metadata.annotations, [ANNOTATION.run]: JSON.stringify(RUN) };
    }
    const history = readHistory(state);
    expect(history).toHaveLength(20);
    expect(history.map((h) => h.durationMs)).toEqual(Array.from({ length: 20 }, (_, i) => i + 10));
    expect(Buffer.byteLength(state.metadata.annotations?.[HISTORY_ANNOTATION] ?? '')).toBeLessThanOrEqual(
      4096,
    );
    expect(readTotals(state).failed).toBe(30);
  });
});

describe('totals', () => {
  it.each([
    { seconds: 0, bucket: '1' },
    { seconds: 1, bucket: '1' },
    { seconds: 1.001, bucket: '5' },
    { seconds: 300, bucket: '300' },
    { seconds: 300.5, bucket: '+Inf' },
  ])('observes $seconds s in bucket le=$bucket', ({ seconds, bucket }) => {
    expect(bucketOf(seconds)).toBe(bucket);
  });

  it('only grows, and remembers the last success', () => {
    let t = emptyTotals();
    t = addOutcome(t, { kind: 'Succeeded', durationMs: 500, atMs: 10 });
    t = addOutcome(t, { kind: 'TimedOut', durationMs: 301_000, atMs: 20 });
    t = addOutcome(t, { kind: 'ExecutionError', durationMs: 0, atMs: 30 });
    expect(t).toMatchObject({ succeeded: 1, timedOut: 1, executionError: 1, lastSuccessMs: 10 });
    expect(t.durationBuckets).toMatchObject({ '1': 2, '+Inf': 1 });
    expect(parseTotals(JSON.stringify(t))).toEqual(t);
  });

  it('reads damaged fields as zero, never negative', () => {
    expect(
      parseTotals('{"succeeded":-4,"failed":"x","durationBuckets":{"1":-1,"5":2.7},"durationSumSeconds":-3}'),
    ).toEqual({
      ...emptyTotals(),
      durationBuckets: { ...emptyTotals().durationBuckets, '5': 2 },
    });
    expect(parseTotals('[1,2]')).toEqual(emptyTotals());
  });
});

describe('text bounds', () => {
  it.each([
    { text: 'hello', max: 10, out: 'hello' },
    { text: 'hello world', max: 6, out: 'hello…' },
    { text: '😀😀😀', max: 2, out: '😀…' },
  ])('truncateChars($text, $max) = $out', ({ text, max, out }) => {
    expect(truncateChars(text, max)).toBe(out);
  });

  it.each([
    { text: 'abc', max: 3, out: 'abc' },
    { text: 'abcdef', max: 5, out: 'ab…' },
    { text: 'ü😀', max: 5, out: 'ü…' },
    { text: 'ü😀', max: 6, out: 'ü😀' },
  ])('truncateUtf8($text, $max) = $out', ({ text, max, out }) => {
    expect(truncateUtf8(text, max)).toBe(out);
    expect(Buffer.byteLength(truncateUtf8(text, max))).toBeLessThanOrEqual(max);
  });
});
