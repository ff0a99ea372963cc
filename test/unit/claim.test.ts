import { describe, expect, it } from 'vitest';
import { decideClaim, leaseUntil } from '../../lib/run/claim.ts';
import { type AcceptedReport, type ActiveRun, ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

const NOW_MS = 1_700_000_000_000;
const UUID = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';

const RUN: ActiveRun = {
  uuid: UUID,
  startedAtMs: NOW_MS - 60_000,
  deadlineMs: NOW_MS + 240_000,
  pod: 'dns-1699999940',
  runner: 'runner-a',
  leaseUntilMs: NOW_MS + 20_000,
};

function stateWith(annotations: Record<string, string>): KhState {
  const state = newKhState('dns', 'checks');
  state.metadata.annotations = annotations;
  state.metadata.resourceVersion = '7';
  return state;
}

const runAnnotation = (run: Partial<ActiveRun> = {}) => JSON.stringify({ ...RUN, ...run });
const reportAnnotation = (report: Partial<AcceptedReport> = {}) =>
  JSON.stringify({
    uuid: UUID,
    atMs: NOW_MS - 1_000,
    ok: true,
    errors: [],
    pod: 'dns-1699999940',
    ...report,
  });

describe('decideClaim', () => {
  it.each([
    { name: 'no khstate at all', state: null, expected: { kind: 'claim' } },
    { name: 'a khstate without a run annotation', state: stateWith({}), expected: { kind: 'claim' } },
    {
      name: 'a khstate with only an old report and outcome',
      state: stateWith({ [ANNOTATION.report]: reportAnnotation(), [ANNOTATION.outcome]: '{"uuid":"x"}' }),
      expected: { kind: 'claim' },
    },
    {
      name: 'a live run (lease and deadline in the future)',
      state: stateWith({ [ANNOTATION.run]: runAnnotation() }),
      expected: { kind: 'busy', run: RUN },
    },
    {
      name: 'a lease ending one millisecond from now',
      state: stateWith({ [ANNOTATION.run]: runAnnotation({ leaseUntilMs: NOW_MS + 1 }) }),
      expected: { kind: 'busy', run: { ...RUN, leaseUntilMs: NOW_MS + 1 } },
    },
    {
      name: 'a lease that expired before the deadline',
      state: stateWith({ [ANNOTATION.run]: runAnnotation({ leaseUntilMs: NOW_MS - 1 }) }),
      expected: { kind: 'adopt', run: { ...RUN, leaseUntilMs: NOW_MS - 1 } },
    },
    {
      name: 'a lease released right now (leaseUntilMs = now)',
      state: stateWith({ [ANNOTATION.run]: runAnnotation({ leaseUntilMs: NOW_MS }) }),
      expected: { kind: 'adopt', run: { ...RUN, leaseUntilMs: NOW_MS } },
    },
    {
      name: 'a deadline that passed without a report',
      state: stateWith({
        [ANNOTATION.run]: runAnnotation({ deadlineMs: NOW_MS - 1, leaseUntilMs: NOW_MS - 1 }),
      }),
      expected: {
        kind: 'close-stale',
        reported: false,
        run: { ...RUN, deadlineMs: NOW_MS - 1, leaseUntilMs: NOW_MS - 1 },
      },
    },
    {
      name: 'a deadline reached exactly now, lease still held',
      state: stateWith({
        [ANNOTATION.run]: runAnnotation({ deadlineMs: NOW_MS, leaseUntilMs: NOW_MS + 5_000 }),
      }),
      expected: {
        kind: 'close-stale',
        reported: false,
        run: { ...RUN, deadlineMs: NOW_MS, leaseUntilMs: NOW_MS + 5_000 },
      },
    },
    {
      name: 'a deadline that passed with an accepted report of that run',
      state: stateWith({
        [ANNOTATION.run]: runAnnotation({ deadlineMs: NOW_MS - 1, leaseUntilMs: NOW_MS - 1 }),
        [ANNOTATION.report]: reportAnnotation(),
      }),
      expected: {
        kind: 'close-stale',
        reported: true,
        run: { ...RUN, deadlineMs: NOW_MS - 1, leaseUntilMs: NOW_MS - 1 },
      },
    },
    {
      name: 'a deadline that passed with a report of an earlier run only',
      state: stateWith({
        [ANNOTATION.run]: runAnnotation({ deadlineMs: NOW_MS - 1, leaseUntilMs: NOW_MS - 1 }),
        [ANNOTATION.report]: reportAnnotation({ uuid: 'an-earlier-run' }),
      }),
      expected: {
        kind: 'close-stale',
        reported: false,
        run: { ...RUN, deadlineMs: NOW_MS - 1, leaseUntilMs: NOW_MS - 1 },
      },
    },
    {
      name: 'a deadline that passed with a malformed report annotation',
      state: stateWith({
        [ANNOTATION.run]: runAnnotation({ deadlineMs: NOW_MS - 1, leaseUntilMs: NOW_MS - 1 }),
        [ANNOTATION.report]: '{"uuid": "6f1c2a7e',
      }),
      expected: {
        kind: 'close-stale',
        reported: false,
        run: { ...RUN, deadlineMs: NOW_MS - 1, leaseUntilMs: NOW_MS - 1 },
      },
    },
    {
      name: 'a truncated run annotation (invalid JSON)',
      state: stateWith({ [ANNOTATION.run]: runAnnotation().slice(0, 30) }),
      expected: { kind: 'claim' },
    },
    {
      name: 'a run annotation that is JSON null',
      state: stateWith({ [ANNOTATION.run]: 'null' }),
      expected: { kind: 'claim' },
    },
    {
      name: 'a run annotation that is a JSON string',
      state: stateWith({ [ANNOTATION.run]: '"run"' }),
      expected: { kind: 'claim' },
    },
    {
      name: 'a run annotation missing leaseUntilMs',
      state: stateWith({ [ANNOTATION.run]: JSON.stringify({ ...RUN, leaseUntilMs: undefined }) }),
      expected: { kind: 'claim' },
    },
    {
      name: 'a run annotation with a string deadline',
      state: stateWith({ [ANNOTATION.run]: JSON.stringify({ ...RUN, deadlineMs: String(RUN.deadlineMs) }) }),
      expected: { kind: 'claim' },
    },
    {
      name: 'an empty run annotation',
      state: stateWith({ [ANNOTATION.run]: '' }),
      expected: { kind: 'claim' },
    },
  ])('$name → $expected.kind', ({ state, expected }) => {
    expect(decideClaim(state, NOW_MS)).toEqual(expected);
  });

  it('treats a khstate without any annotations map as unclaimed', () => {
    const state = newKhState('dns', 'checks');
    delete state.metadata.annotations;
    expect(decideClaim(state, NOW_MS)).toEqual({ kind: 'claim' });
  });
});

describe('leaseUntil', () => {
  it.each([
    {
      name: 'lease well inside the deadline',
      nowMs: 1_000,
      leaseMs: 30_000,
      deadlineMs: 300_000,
      expected: 31_000,
    },
    {
      name: 'lease reaching past the deadline is capped',
      nowMs: 290_000,
      leaseMs: 30_000,
      deadlineMs: 300_000,
      expected: 300_000,
    },
    {
      name: 'lease ending exactly at the deadline',
      nowMs: 270_000,
      leaseMs: 30_000,
      deadlineMs: 300_000,
      expected: 300_000,
    },
    {
      name: 'after the deadline the lease is the deadline',
      nowMs: 310_000,
      leaseMs: 30_000,
      deadlineMs: 300_000,
      expected: 300_000,
    },
  ])('$name', ({ nowMs, leaseMs, deadlineMs, expected }) => {
    expect(leaseUntil(nowMs, leaseMs, deadlineMs)).toBe(expected);
  });
});
