import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { WriteConflict } from '../../lib/kube/errors.ts';
import { type LeaseKeeperOptions, startLeaseKeeper } from '../../lib/run/lease-keeper.ts';
import { ManualScheduler, settle } from './fakes/manual-scheduler.ts';

type Answer = 'renewed' | 'superseded' | Error;

/** A keeper whose renew() answers from a script (the last answer repeats), with its scheduler and logs. */
function keeper(answers: Answer[], over: Partial<LeaseKeeperOptions> = {}) {
  const scheduler = new ManualScheduler();
  const controller = new AbortController();
  const warnings: Record<string, unknown>[] = [];
  const warned: string[] = [];
  const debugs: Record<string, unknown>[] = [];
  let renewals = 0;
  const renew = async () => {
    const answer = answers[Math.min(renewals, answers.length - 1)] as Answer;
    renewals += 1;
    await settle();
    if (answer instanceof Error) throw answer;
    return answer;
  };
  let stopped = false;
  const keeping = startLeaseKeeper({
    leaseMs: 30_000,
    heldUntilMs: 30_000,
    clock: scheduler,
    renew,
    scheduler,
    signal: controller.signal,
    log: {
      info() {},
      error() {},
      debug: (_m, extra) => debugs.push(extra ?? {}),
      warn: (message, extra) => {
        warned.push(message);
        warnings.push(extra ?? {});
      },
    },
    ...over,
  }).then(() => {
    stopped = true;
  });
  return {
    scheduler,
    controller,
    warnings,
    warned,
    debugs,
    keeping,
    renewals: () => renewals,
    stopped: () => stopped,
  };
}

/** Runs n renewals, one after the other. */
async function renewTimes(k: ReturnType<typeof keeper>, n: number) {
  for (let i = 0; i < n; i++) await k.scheduler.runNext();
}

describe('startLeaseKeeper', () => {
  it('renews every half lease, the next one scheduled once the last has finished', async () => {
    const k = keeper(['renewed']);
    expect(k.scheduler.requestedMs).toEqual([15_000]);
    expect(k.renewals()).toBe(0);
    await renewTimes(k, 3);
    expect(k.renewals()).toBe(3);
    expect(k.scheduler.requestedMs).toEqual([15_000, 15_000, 15_000, 15_000]);
    expect(k.warnings).toEqual([]);
    k.controller.abort();
    await k.keeping;
  });

  it.each([
    { leaseMs: 100, intervalMs: 200 },
    { leaseMs: 400, intervalMs: 200 },
    { leaseMs: 10_000, intervalMs: 5_000 },
  ])('renews a $leaseMs ms lease every $intervalMs ms', async ({ leaseMs, intervalMs }) => {
    const k = keeper(['renewed'], { leaseMs });
    expect(k.scheduler.requestedMs).toEqual([intervalMs]);
    k.controller.abort();
    await k.keeping;
  });

  it('retries a failed renewal at once, doubling up to 5 s, logs each failure, then resumes its rhythm', async () => {
    const down = new Error('connect ECONNREFUSED 10.96.0.1:443');
    const k = keeper([...Array<Answer>(8).fill(down), 'renewed']);
    await renewTimes(k, 10);
    expect(k.scheduler.requestedMs).toEqual([
      15_000, 100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000, 15_000, 15_000,
    ]);
    expect(k.warnings).toHaveLength(9);
    expect(k.warnings[0]).toEqual({
      error: 'Error: connect ECONNREFUSED 10.96.0.1:443',
      failures: 1,
      retryInMs: 100,
    });
    expect(k.warnings[7]).toMatchObject({ failures: 8, retryInMs: 5_000 });
    // The ninth renewal landed at 31.3 s, after the lease (30 s) had run out: said so, with by how much.
    expect(k.warned[8]).toBe(
      'lease lapsed before it was renewed; ownership re-checked: the run is still ours',
    );
    expect(k.warnings[8]).toEqual({ lapsedForMs: 1_300, failures: 8 });
    k.controller.abort();
    await k.keeping;
  });

  it('retries a write conflict (a report landed between read and write) at once rather than half a lease later', async () => {
    const k = keeper([new WriteConflict('Conflict'), 'renewed']);
    await renewTimes(k, 2);
    expect(k.scheduler.requestedMs).toEqual([15_000, 100, 15_000]);
    // Routine, so logged at debug level only.
    expect(k.warnings).toEqual([]);
    expect(k.debugs).toEqual([{ failures: 1, retryInMs: 100 }]);
    k.controller.abort();
    await k.keeping;
  });

  it('never backs off longer than the renewal interval', async () => {
    const k = keeper([new Error('down')], { leaseMs: 2_000 });
    await renewTimes(k, 6);
    expect(k.scheduler.requestedMs).toEqual([1_000, 100, 200, 400, 800, 1_000, 1_000]);
    k.controller.abort();
    await k.keeping;
  });

  it('takes its retry delays from the options', async () => {
    const k = keeper([new Error('down')], { retryInitialMs: 1_000, retryMaxMs: 4_000 });
    await renewTimes(k, 4);
    expect(k.scheduler.requestedMs).toEqual([15_000, 1_000, 2_000, 4_000, 4_000]);
    k.controller.abort();
    await k.keeping;
  });

  it('stops by itself once the run is lost', async () => {
    const k = keeper(['renewed', 'superseded']);
    await renewTimes(k, 2);
    await k.keeping;
    expect(k.renewals()).toBe(2);
    expect(k.scheduler.pending).toBe(0);
    expect(getEventListeners(k.controller.signal, 'abort')).toHaveLength(0);
  });

  it('stops on abort: the pending renewal is cancelled and its listener removed', async () => {
    const k = keeper(['renewed']);
    expect(getEventListeners(k.controller.signal, 'abort')).toHaveLength(1);
    k.controller.abort();
    await k.keeping;
    expect(k.scheduler.pending).toBe(0);
    expect(k.renewals()).toBe(0);
    expect(getEventListeners(k.controller.signal, 'abort')).toHaveLength(0);
  });

  it('resolves after a renewal in flight at the abort has settled, and schedules nothing after it', async () => {
    const k = keeper(['renewed']);
    await k.scheduler.advanceByMs(14_999);
    expect(k.renewals()).toBe(0);
    const [next] = k.scheduler.pendingInMs;
    expect(next).toBe(1);
    // Start the renewal without letting it finish, then abort.
    const running = k.scheduler.runNext();
    k.controller.abort();
    expect(k.stopped()).toBe(false);
    await running;
    await k.keeping;
    expect(k.renewals()).toBe(1);
    expect(k.scheduler.pending).toBe(0);
    expect(k.scheduler.requestedMs).toEqual([15_000]);
  });

  it('warns once when the lease expires while renewals fail, then says the renewal found the run still ours', async () => {
    const down = new Error('503 Service Unavailable');
    const k = keeper([...Array<Answer>(6).fill(down), 'renewed'], { leaseMs: 2_000, heldUntilMs: 2_000 });
    await renewTimes(k, 7);
    // Failures at 1.0, 1.1, 1.3, 1.7, 2.5 and 3.5 s (back-off capped at the 1 s interval); the lease ran
    // out at 2 s; renewed at 4.5 s.
    const expired = 'lease expired while renewals fail: another invocation may adopt the run';
    expect(k.warned.filter((m) => m === expired)).toHaveLength(1);
    expect(k.warnings[k.warned.indexOf(expired)]).toEqual({ expiredForMs: 500, failures: 5 });
    expect(k.warned.at(-1)).toBe(
      'lease lapsed before it was renewed; ownership re-checked: the run is still ours',
    );
    expect(k.warnings.at(-1)).toEqual({ lapsedForMs: 2_500, failures: 6 });
    // Renewed at 4.5 s, so held until 6.5 s: the next renewal (5.5 s) is on time and silent.
    await renewTimes(k, 1);
    expect(k.warned).toHaveLength(8);
    k.controller.abort();
    await k.keeping;
  });

  it('says so when the lease lapsed and the renewal found the run taken: stepping down', async () => {
    const k = keeper([new Error('down'), new Error('down'), 'superseded'], {
      leaseMs: 2_000,
      heldUntilMs: 1_050,
    });
    await renewTimes(k, 3);
    await k.keeping;
    expect(k.warned.at(-1)).toBe('lease lapsed and the run is no longer ours: stepping down');
    expect(k.warnings.at(-1)).toEqual({ lapsedForMs: 250 });
    expect(k.scheduler.pending).toBe(0);
  });

  it('does nothing when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const scheduler = new ManualScheduler();
    await startLeaseKeeper({
      leaseMs: 30_000,
      heldUntilMs: 30_000,
      clock: scheduler,
      renew: () => Promise.reject(new Error('must not renew')),
      scheduler,
      signal: controller.signal,
      log: { info() {}, debug() {}, error() {}, warn() {} },
    });
    expect(scheduler.requestedMs).toEqual([]);
  });
});
