import { describe, expect, it } from 'vitest';
import { type AuditRequest, writeTimeOf } from '../bench/kh-audit.ts';
import { marksOf, nextRuns, type SeenRun } from '../bench/kh-run-watch.ts';

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

describe('the API server time of a write a watcher saw', () => {
  const req = (atMs: number, over: Partial<AuditRequest> = {}): AuditRequest => ({
    atMs,
    user: 'u',
    verb: 'update',
    resource: 'khstates',
    namespace: 'ns',
    name: 'c',
    ...over,
  });
  const match = { user: 'u', namespace: 'ns', resource: 'khstates' };

  it('is the last matching write received at or before the sighting, within 3 s', () => {
    const requests = [
      req(1000),
      req(1200, { verb: 'get' }),
      req(1300, { namespace: 'other' }),
      req(1400, { user: 'someone else' }),
      req(1500, { resource: 'pods' }),
      req(1600),
      req(1700),
    ];
    expect(writeTimeOf(requests, match, 1650)).toBe(1600);
    expect(writeTimeOf(requests, match, 1599)).toBe(1000);
    expect(writeTimeOf(requests, match, 999)).toBeUndefined();
    expect(writeTimeOf(requests, match, 5000)).toBeUndefined();
  });
});
