import { timingSafeEqual } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { sameUuid } from '../../lib/report/accept-report.ts';
import { gateReport, parseReportBody, type ReportResult } from '../../lib/report/parse-report.ts';
import { recordFault } from '../integration/faults/helpers/fault-table.ts';

// The report parser and gate driven by random input: arbitrary text, arbitrary JSON, report-shaped
// objects with odd key casing, duplicate keys, wrong types and unicode, and mutations of valid bodies.
// Fixed seed and bounded runs, so a failure replays exactly.

vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, timingSafeEqual: vi.fn(actual.timingSafeEqual) };
});

const SEED = 0x6b68;
const RUNS = 3_000;
let total = 0;
let accepted = 0;
const settings = { seed: SEED, numRuns: RUNS };

/** Every accepted result's invariants: what the endpoint may store. */
function checkAccepted(body: string): ReportResult {
  total++;
  const parsed = parseReportBody(body);
  // Stable: the same body always reads the same way.
  expect(parseReportBody(body)).toEqual(parsed);
  if (!parsed.ok) {
    expect(parsed.reason).toMatch(/send a JSON object such as/);
    return parsed;
  }
  expect(typeof parsed.report.OK).toBe('boolean');
  expect(parsed.report.Errors.every((e) => typeof e === 'string')).toBe(true);
  const gated = gateReport(parsed.report);
  expect(gateReport(parsed.report)).toEqual(gated);
  if (gated.ok) {
    accepted++;
    // Never OK=false without a reason, never a blank reason, never healthy with errors.
    expect(gated.report.OK).toBe(gated.report.Errors.length === 0);
    expect(gated.report.Errors.every((e) => e.trim() !== '')).toBe(true);
    // Idempotent, and what is stored reads back the same.
    expect(gateReport(gated.report)).toEqual(gated);
    expect(parseReportBody(JSON.stringify(gated.report))).toEqual({ ok: true, report: gated.report });
  }
  return gated;
}

const keyOf = (name: string) =>
  fc.oneof(
    fc.constant(name),
    fc.mixedCase(fc.constant(name)),
    fc.constant(name.replace(/k/i, '\u212A')),
    fc.constant(name.replace(/s/i, '\u017F')),
  );
const anyString = fc.string({ unit: 'binary', maxLength: 40 });
const reportObject = fc
  .array(
    fc.oneof(
      fc.tuple(keyOf('OK'), fc.oneof(fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }))),
      fc.tuple(
        keyOf('Errors'),
        fc.oneof(
          fc.array(fc.oneof(anyString, fc.constant(''), fc.constant(' \t'), fc.constant(null)), {
            maxLength: 5,
          }),
          fc.constant(null),
          fc.jsonValue({ maxDepth: 2 }),
        ),
      ),
      fc.tuple(anyString, fc.jsonValue({ maxDepth: 2 })),
    ),
    { maxLength: 6 },
  )
  .map((members) => `{${members.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`);

// A property run takes 1–3 s on an idle core and more on a shared one: bounded by the run count, not the clock.
const FUZZ_TIMEOUT = { timeout: 120_000 };

describe('the report parser and gate under random input', FUZZ_TIMEOUT, () => {
  // The row only from a passing run: a failing property is a defect to fix, not a figure to publish.
  // biome-ignore lint/correctness/noEmptyPattern: Vitest requires a destructured context before the suite.
  afterAll(async ({}, suite) => {
    if (!suite.tasks.every((t) => t.result?.state === 'pass')) return;
    await recordFault({
      fault: `fuzz: report parser and gate, random bodies (fast-check, seed ${SEED})`,
      runs: total,
      outcome: `${accepted} accepted, ${total - accepted} rejected with a reason; never threw; same body, same answer; no accepted report with OK=false and no error, a blank error, or OK=true with errors; accepted reports round-trip (pure functions: no checker, no khstate)`,
      reported: 0,
      recorded: 0,
    });
  });

  it('never throws on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (body) => {
        checkAccepted(body);
      }),
      settings,
    );
  });

  it('never throws on arbitrary JSON, at the top level or under the report keys', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 4 }), (body) => {
        checkAccepted(body);
      }),
      settings,
    );
  });

  it('holds its invariants on report-shaped bodies: odd key casing, duplicates, nulls, wrong types', () => {
    fc.assert(
      fc.property(reportObject, (body) => {
        checkAccepted(body);
      }),
      settings,
    );
  });

  it('reads well-formed reports exactly, unicode and control characters included', () => {
    const text = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 });
    fc.assert(
      fc.property(fc.boolean(), fc.array(text, { maxLength: 4 }), (ok, errors) => {
        const parsed = checkAccepted(JSON.stringify({ OK: ok, Errors: errors }));
        const meaningful = errors.length > 0 && errors.every((e) => e.trim() !== '');
        if (ok && errors.length === 0) expect(parsed).toEqual({ ok: true, report: { OK: true, Errors: [] } });
        else if (meaningful) expect(parsed).toEqual({ ok: true, report: { OK: false, Errors: errors } });
        else expect(parsed.ok).toBe(false);
      }),
      settings,
    );
  });

  it('survives truncated, spliced and padded valid bodies', () => {
    const valid = '{"OK":false,"Errors":["disk \\u00fcber 90%","dns: timeout \\ud83d\\ude80"]}';
    fc.assert(
      fc.property(
        fc.nat(valid.length),
        fc.nat(valid.length),
        fc.string({ unit: 'binary', maxLength: 8 }),
        (cut, at, insert) => {
          checkAccepted(valid.slice(0, cut));
          checkAccepted(`${valid.slice(0, at)}${insert}${valid.slice(at)}`);
          checkAccepted(`${'['.repeat(at * 50)}${valid}`);
        },
      ),
      { ...settings, numRuns: 1_000 },
    );
  });
});

describe('sameUuid, the report credential check', FUZZ_TIMEOUT, () => {
  it('agrees with string equality and compares through crypto.timingSafeEqual', async () => {
    const compare = vi.mocked(timingSafeEqual);
    compare.mockClear();
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), (a, b) => {
        expect(sameUuid(a, b)).toBe(a === b);
        expect(sameUuid(a, a)).toBe(true);
      }),
      settings,
    );
    // Equal-length inputs (every pair of UUIDs) always go through the constant-time comparison.
    expect(compare).toHaveBeenCalledTimes(RUNS * 2);
    expect(sameUuid('7c1f3a52-0000-4000-8000-000000000000', '7c1f3a52')).toBe(false);
    await recordFault({
      fault: 'boundary: run UUID comparison (sameUuid) on random pairs',
      runs: RUNS * 2,
      outcome:
        'agrees with string equality; every equal-length comparison goes through crypto.timingSafeEqual (a pure function: no checker, no khstate)',
      reported: 0,
      recorded: 0,
    });
  });
});
