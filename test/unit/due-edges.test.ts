import { describe, expect, it } from 'vitest';
import { decideHealthCheckDue } from '../../lib/healthcheck/due.ts';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import { decideJobDue } from '../../lib/job/due.ts';
import type { KhJob } from '../../lib/job/khjob.ts';
import { DEFAULT_DUE_TIMINGS, type DueDecision, decideDue } from '../../lib/schedule/due.ts';
import { DISPATCH_ANNOTATION } from '../../lib/state/dispatch-claim.ts';
import { type ActiveRun, ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

// The edges of the tick's other due decisions, for each kind (khcheck, HealthCheck, khjob), each checked at
// the millisecond before and at the edge: a run is left alone while its lease holds (due the moment it
// ends), closed as stale from its deadline on (adopted before it), and a dispatch is pending for exactly
// dispatchTtlMs. A khjob's dispatch claim made the moment the khjob was created is the khjob's own.

const T0 = Date.parse('2026-01-01T12:00:00Z');
const TTL = DEFAULT_DUE_TIMINGS.dispatchTtlMs;
const UID = '0e5b7c8a-1d2f-4a6b-9c3d-5e7f9a1b3c5d';
/** A run whose lease ends before its deadline: between them it is abandoned, from the deadline on stale. */
const RUN: ActiveRun = {
  uuid: UID,
  startedAtMs: T0,
  deadlineMs: T0 + 120_000,
  pod: 'c-1',
  runner: 'r',
  holder: 'r/1',
  leaseUntilMs: T0 + 30_000,
};
const dispatch = { atMs: T0, ref: 'job-1', by: 'tick-a' };

function khstate(annotations: Record<string, unknown>): KhState {
  const s = newKhState('c', 'ns');
  s.metadata.annotations = Object.fromEntries(
    Object.entries(annotations).map(([k, v]) => [k, JSON.stringify(v)]),
  );
  return s;
}

function healthCheck(annotations: Record<string, unknown>, currentUUID = ''): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: {
      name: 'c',
      namespace: 'ns',
      uid: 'uid-hc',
      annotations: Object.fromEntries(Object.entries(annotations).map(([k, v]) => [k, JSON.stringify(v)])),
    },
    spec: {
      runInterval: '10m',
      timeout: '2m',
      podSpec: { spec: { containers: [{ name: 'c', image: 'x' }] } },
    },
    status: { ok: true, currentUUID, lastRunUnix: Math.floor(T0 / 1000) - 3_600 },
  };
}

const khjob: KhJob = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyJob',
  metadata: { name: 'c', namespace: 'ns', uid: UID, creationTimestamp: new Date(T0) },
  spec: { timeout: '2m', podSpec: { containers: [{ name: 'main', image: 'x' }] } },
};

const KINDS: Array<{ kind: string; withRun: (nowMs: number) => DueDecision | undefined }> = [
  {
    kind: 'khcheck',
    withRun: (nowMs) =>
      decideDue({
        key: 'k',
        runIntervalMs: 600_000,
        createdAtMs: T0 - 3_600_000,
        state: khstate({ [ANNOTATION.run]: RUN }),
        nowMs,
      }),
  },
  {
    kind: 'HealthCheck',
    withRun: (nowMs) => decideHealthCheckDue(healthCheck({ [ANNOTATION.run]: RUN }, RUN.uuid), nowMs),
  },
  { kind: 'khjob', withRun: (nowMs) => decideJobDue(khjob, khstate({ [ANNOTATION.run]: RUN }), nowMs) },
];

describe.each(KINDS)('$kind: a run in the state', ({ withRun }) => {
  it('is left alone until its lease ends, and due (adopted) the moment it ends', () => {
    expect(withRun(RUN.leaseUntilMs - 1)).toEqual({
      due: false,
      reason: 'running',
      nextCheckMs: RUN.leaseUntilMs,
    });
    expect(withRun(RUN.leaseUntilMs)).toEqual({ due: true, reason: 'adopt-abandoned' });
  });

  it('is closed as stale from its deadline on, adopted the millisecond before', () => {
    expect(withRun(RUN.deadlineMs - 1)).toEqual({ due: true, reason: 'adopt-abandoned' });
    expect(withRun(RUN.deadlineMs)).toEqual({ due: true, reason: 'close-stale' });
  });
});

describe('a dispatch not yet followed by a run is pending for exactly dispatchTtlMs', () => {
  const pending = { due: false, reason: 'dispatched', nextCheckMs: T0 + TTL };
  it.each([
    {
      kind: 'khcheck',
      decide: (nowMs: number) =>
        // A dispatch that no run followed anchors the interval (5 min, due 30 s early): due by the TTL's end.
        decideDue({
          key: 'k',
          runIntervalMs: 300_000,
          createdAtMs: T0 - 3_600_000,
          state: khstate({ [DISPATCH_ANNOTATION]: dispatch }),
          nowMs,
        }),
      after: 'interval-passed',
    },
    {
      kind: 'HealthCheck',
      decide: (nowMs: number) =>
        decideHealthCheckDue(healthCheck({ [ANNOTATION.dispatch]: dispatch }), nowMs),
      after: 'interval-passed',
    },
    {
      kind: 'khjob',
      decide: (nowMs: number) => decideJobDue(khjob, khstate({ [DISPATCH_ANNOTATION]: dispatch }), nowMs),
      after: 'never-run',
    },
  ])('$kind', ({ decide, after }) => {
    expect(decide(T0 + TTL - 1)).toEqual(pending);
    expect(decide(T0 + TTL)).toEqual({ due: true, reason: after });
  });
});

describe("a khjob's dispatch claim", () => {
  it('made the millisecond the khjob was created is its own (pending); one made before is an earlier khjob’s', () => {
    const at = (atMs: number) =>
      decideJobDue(khjob, khstate({ [DISPATCH_ANNOTATION]: { ...dispatch, atMs } }), T0 + 1_000);
    expect(at(T0)).toEqual({ due: false, reason: 'dispatched', nextCheckMs: T0 + TTL });
    expect(at(T0 - 1)).toEqual({ due: true, reason: 'never-run' });
  });
});
