import { describe, expect, it } from 'vitest';
import { acceptReport, type ReportDecision, sameUuid } from '../../lib/report/accept-report.ts';
import {
  type ActiveRun,
  ANNOTATION,
  newKhState,
  readAcceptedReport,
  readActiveRun,
} from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

const T0 = Date.UTC(2024, 2, 5, 10, 20, 30, 0);
const UUID = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
const OTHER = '0b7e4f63-9a4c-4b8e-8a52-3f2f1c5d6e7a';
const REF = 'checks/dns';
const NOT_ACTIVE =
  "the run UUID is not the active run of check checks/dns (a report from an earlier run, or another check's)";

const RUN: ActiveRun = {
  uuid: UUID,
  startedAtMs: T0,
  deadlineMs: T0 + 300_000,
  pod: 'dns-1709634030',
  runner: 'runner-a',
  leaseUntilMs: T0 + 30_000,
};

function activeState(
  opts: { specUuid?: string; run?: ActiveRun | null; extra?: Record<string, string> } = {},
): KhState {
  const state = newKhState('dns', 'checks');
  state.metadata.resourceVersion = '12';
  state.spec = {
    OK: false,
    Errors: ['previous failure'],
    RunDuration: '4.2s',
    Namespace: 'checks',
    Node: 'node-old',
    LastRun: '2024-03-05T10:10:00Z',
    AuthoritativePod: 'runner-old',
    uuid: opts.specUuid ?? UUID,
  };
  const run = opts.run === undefined ? RUN : opts.run;
  state.metadata.annotations = {
    ...(run ? { [ANNOTATION.run]: JSON.stringify(run) } : {}),
    [ANNOTATION.consecutiveFailures]: '2',
    ...opts.extra,
  };
  return state;
}

function input(state: KhState | null, over: Partial<Parameters<typeof acceptReport>[0]> = {}) {
  return {
    state,
    checkRef: REF,
    uuid: UUID,
    report: { OK: true, Errors: [] as string[] },
    pod: 'dns-1709634030',
    server: 'khrun-report-7d9f',
    nowMs: T0 + 1_500,
    ...over,
  };
}

function rejected(decision: ReportDecision): string {
  if (decision.ok) throw new Error('expected a rejection');
  return decision.reason;
}

describe('acceptReport rejections', () => {
  it.each([
    {
      name: 'no khstate',
      state: null,
      over: {},
      reason: 'check checks/dns has no khstate: no run is active',
    },
    {
      name: 'no active run (a late or replayed report)',
      state: activeState({ run: null }),
      over: {},
      reason: 'check checks/dns has no active run: the report is late (its run already ended) or replayed',
    },
    {
      name: 'a malformed run annotation',
      state: activeState({ run: null, extra: { [ANNOTATION.run]: '{"uuid":' } }),
      over: {},
      reason: 'check checks/dns has no active run: the report is late (its run already ended) or replayed',
    },
    {
      name: 'a UUID that is not the active run',
      state: activeState(),
      over: { uuid: OTHER },
      reason: NOT_ACTIVE,
    },
    {
      name: 'a prefix of the active run UUID',
      state: activeState(),
      over: { uuid: UUID.slice(0, 8) },
      reason: NOT_ACTIVE,
    },
    {
      name: 'spec.uuid not matching the run (someone overwrote it)',
      state: activeState({ specUuid: OTHER }),
      over: {},
      reason: NOT_ACTIVE,
    },
    {
      name: 'a report after the deadline',
      state: activeState(),
      over: { nowMs: RUN.deadlineMs + 1 },
      reason: `the report arrived after the run's deadline ${new Date(RUN.deadlineMs).toISOString()}`,
    },
    {
      name: 'a second report for the same run',
      state: activeState({
        extra: {
          [ANNOTATION.report]: JSON.stringify({
            uuid: UUID,
            atMs: T0 + 1_000,
            ok: false,
            errors: ['first'],
            pod: 'p',
          }),
        },
      }),
      over: {},
      reason: `this run already reported at ${new Date(T0 + 1_000).toISOString()}; only the first report counts`,
    },
  ])('rejects $name', ({ state, over, reason }) => {
    expect(rejected(acceptReport(input(state, over)))).toBe(reason);
  });

  it('accepts a report exactly at the deadline', () => {
    expect(acceptReport(input(activeState(), { nowMs: RUN.deadlineMs })).ok).toBe(true);
  });
});

describe('acceptReport acceptance', () => {
  it('writes OK, Errors, LastRun and AuthoritativePod and leaves the other spec fields', () => {
    const before = activeState();
    const decision = acceptReport(input(before, { report: { OK: false, Errors: ['kube-dns timed out'] } }));
    if (!decision.ok) throw new Error(decision.reason);
    expect(decision.next.spec).toEqual({
      OK: false,
      Errors: ['kube-dns timed out'],
      RunDuration: '4.2s',
      Namespace: 'checks',
      Node: 'node-old',
      LastRun: '2024-03-05T10:20:31Z',
      AuthoritativePod: 'khrun-report-7d9f',
      uuid: UUID,
    });
  });

  it('records the accepted report in its annotation and keeps the run and other bookkeeping', () => {
    const before = activeState();
    const decision = acceptReport(input(before));
    if (!decision.ok) throw new Error(decision.reason);
    expect(readAcceptedReport(decision.next)).toEqual({
      uuid: UUID,
      atMs: T0 + 1_500,
      ok: true,
      errors: [],
      pod: 'dns-1709634030',
    });
    expect(readActiveRun(decision.next)).toEqual(RUN);
    expect(decision.next.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('2');
    expect(decision.next.metadata.resourceVersion).toBe('12');
  });

  it('replaces the report annotation of an earlier run', () => {
    const before = activeState({
      extra: {
        [ANNOTATION.report]: JSON.stringify({
          uuid: OTHER,
          atMs: T0 - 600_000,
          ok: true,
          errors: [],
          pod: 'old',
        }),
      },
    });
    const decision = acceptReport(input(before));
    if (!decision.ok) throw new Error(decision.reason);
    expect(readAcceptedReport(decision.next)?.uuid).toBe(UUID);
  });

  it('does not modify the khstate it was given', () => {
    const before = activeState();
    const copy = structuredClone(before);
    acceptReport(input(before, { report: { OK: false, Errors: ['x'] } }));
    expect(before).toEqual(copy);
  });
});

describe('sameUuid', () => {
  it.each([
    { a: UUID, b: UUID, same: true },
    { a: '', b: '', same: true },
    { a: UUID, b: OTHER, same: false },
    { a: UUID, b: UUID.toUpperCase(), same: false },
    { a: UUID, b: `${UUID} `, same: false },
    { a: UUID, b: UUID.slice(0, -1), same: false },
    { a: '', b: UUID, same: false },
    { a: 'é', b: 'e\u0301', same: false },
    // Same string length, different byte length: must be false, not a timingSafeEqual RangeError.
    { a: 'é', b: 'a', same: false },
    { a: 'é', b: 'ab', same: false },
  ])('sameUuid($a, $b) → $same', ({ a, b, same }) => {
    expect(sameUuid(a, b)).toBe(same);
    expect(sameUuid(b, a)).toBe(same);
  });
});
