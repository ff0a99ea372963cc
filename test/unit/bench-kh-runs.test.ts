import { describe, expect, it } from 'vitest';
import { type AuditRequest, requestBefore } from '../bench/kh-audit.ts';
import { marksOf, nextRuns, type SeenRun } from '../bench/kh-run-watch.ts';
import { khrunDueTimes, v2DueTimes, v3DueTimes } from '../bench/kh-schedule.ts';

const khstate = (uuid: string, lastRun: string, ok = true) =>
  ({ metadata: { name: 'c', namespace: 'ns' }, spec: { uuid, LastRun: lastRun, OK: ok } }) as never;
const healthCheck = (currentUUID: string, successCount: number, failureCount: number, ok: boolean) =>
  ({
    metadata: { name: 'c', namespace: 'ns' },
    status: { currentUUID, successCount, failureCount, ok },
  }) as never;

describe('runs as the benchmark watcher sees them', () => {
  it("a khstate's new uuid starts a run; the next LastRun is its outcome, a later one is not", () => {
    const state = { uuids: new Set<string>() };
    let runs: SeenRun[] = [];
    runs = nextRuns(runs, state, marksOf('khstate', khstate('u1', '')), 1000);
    runs = nextRuns(runs, state, marksOf('khstate', khstate('u1', '')), 1100); // no change of result
    runs = nextRuns(runs, state, marksOf('khstate', khstate('u1', 't1', false)), 1500);
    runs = nextRuns(runs, state, marksOf('khstate', khstate('u1', 't2')), 1700); // v2's second store
    expect(runs).toEqual([{ uuid: 'u1', startSeenMs: 1000, outcomeSeenMs: 1500, ok: false }]);
    runs = nextRuns(runs, state, marksOf('khstate', khstate('u2', 't2')), 2000);
    runs = nextRuns(runs, state, marksOf('khstate', khstate('u2', 't3')), 2600);
    expect(runs.map((r) => [r.uuid, r.outcomeSeenMs, r.ok])).toEqual([
      ['u1', 1500, false],
      ['u2', 2600, true],
    ]);
  });

  it("a HealthCheck's outcome is a new count of results, whether or not currentUUID is cleared with it", () => {
    const state = { uuids: new Set<string>() };
    let runs: SeenRun[] = [];
    runs = nextRuns(runs, state, marksOf('healthcheck', healthCheck('a', 3, 1, true)), 10);
    runs = nextRuns(runs, state, marksOf('healthcheck', healthCheck('', 3, 2, false)), 20);
    runs = nextRuns(runs, state, marksOf('healthcheck', healthCheck('b', 3, 2, false)), 30);
    expect(runs).toEqual([
      { uuid: 'a', startSeenMs: 10, outcomeSeenMs: 20, ok: false },
      { uuid: 'b', startSeenMs: 30 },
    ]);
  });
});

describe('the request that started a run, from the audit log', () => {
  const req = (atMs: number, over: Partial<AuditRequest> = {}): AuditRequest => ({
    atMs,
    user: 'u',
    verb: 'get',
    resource: 'khstates',
    namespace: 'ns',
    name: 'c',
    ...over,
  });
  const match = { user: 'u', namespace: 'ns', resource: 'khstates', verbs: ['get'] };

  it('is the last (or first) matching request received at or before the sighting, within 3 s', () => {
    const requests = [
      req(1000),
      req(1200, { verb: 'update' }),
      req(1300, { namespace: 'other' }),
      req(1400, { user: 'someone else' }),
      req(1500, { resource: 'pods' }),
      req(1600),
      req(1700),
    ];
    expect(requestBefore(requests, match, 1650)).toBe(1600);
    expect(requestBefore(requests, match, 1650, 'first')).toBe(1000);
    expect(requestBefore(requests, match, 1599)).toBe(1000);
    expect(requestBefore(requests, match, 999)).toBeUndefined();
    expect(requestBefore(requests, match, 5000)).toBeUndefined();
  });
});

describe("each run's due time by its actor's schedule", () => {
  it("v2: its ticker's grid from the first release; a tick that fired during a run releases the next at once", () => {
    // Interval 15 s, T0 = 1000. Run 1 released by the tick at 16000; run 1 takes 22 s (past the tick at
    // 31000, which waits for the receive at 38100 and releases run 2); run 3 by the first tick after 38100.
    const releases = [1000, 16_020, 38_100, 46_010];
    const outcomes = [2000, 38_000, 39_000, 47_000];
    expect(v2DueTimes(releases, outcomes, 15_000)).toEqual([1000, 16_000, 38_000, 46_000]);
    expect(v2DueTimes([undefined, 16_020], outcomes, 15_000)).toEqual([undefined, undefined]);
  });

  it("v3: the last run's lastRunUnix + interval, or that run's outcome when it came later", () => {
    expect(v3DueTimes([100, 115, 130], [100_500, 140_000, 131_000], 15_000)).toEqual([
      undefined,
      115_000,
      140_000,
    ]);
  });

  it('khrun: the last Job created at or before the run was seen to start', () => {
    expect(khrunDueTimes([20_000, 5_000, 35_000], [6_000, 21_000, 22_000, 4_000])).toEqual([
      5_000,
      20_000,
      20_000,
      undefined,
    ]);
  });
});
