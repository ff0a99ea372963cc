import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runResultJson } from '../../lib/commands/job-run.ts';
import { silentLog } from '../../lib/core/log.ts';
import { CheckNotFoundError } from '../../lib/run/errors.ts';
import type { IterationResult } from '../../lib/run/iteration.ts';
import type { TriggerTarget } from '../../lib/trigger/gate.ts';
import { type StartRun, triggerRuns } from '../../lib/trigger/trigger-runs.ts';

/** One started run the test drives: claim it, end it, fail it; and see whether it was cancelled. */
interface FakeRun {
  target: { namespace: string; checkName: string };
  signal: AbortSignal;
  claim(adopted?: boolean): void;
  end(result: IterationResult): void;
  fail(error: unknown): void;
}

const recorded: IterationResult = {
  kind: 'recorded',
  runUuid: 'u-1',
  adopted: false,
  outcome: { kind: 'Succeeded', ok: true, errors: [], node: 'n', durationMs: 1200 },
};
const target = (checkName: string, wait = false): TriggerTarget => ({ namespace: 'team-a', checkName, wait });

let started: FakeRun[];
const start: StartRun = (t, hooks) =>
  new Promise<IterationResult>((resolve, reject) => {
    started.push({
      target: t,
      signal: hooks.signal,
      claim: (adopted = false) => hooks.onClaimed(adopted),
      end: resolve,
      fail: reject,
    });
  });

function runs(over: Partial<Parameters<typeof triggerRuns>[0]> = {}) {
  return triggerRuns({
    start,
    maxRuns: 2,
    maxWaitMs: 60_000,
    acceptWaitMs: 10_000,
    outcomeJson: (result, t) => runResultJson(result, { namespace: t.namespace, name: t.checkName }),
    log: silentLog,
    ...over,
  });
}

/** Lets the microtasks of a trigger run (start called, onClaimed awaited) without moving time. */
const settle = () => vi.advanceTimersByTimeAsync(0);

beforeEach(() => {
  started = [];
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('triggered runs', () => {
  it('answers 202 once the run is claimed, and the run goes on in the background', async () => {
    const r = runs();
    const answer = r.trigger(target('a'));
    await settle();
    expect(started.map((s) => s.target)).toEqual([{ namespace: 'team-a', checkName: 'a', wait: false }]);
    started[0]!.claim();
    expect(await answer).toEqual({ status: 202, body: { check: 'team-a/a', accepted: true }, headers: {} });
    expect(r.active()).toEqual(['team-a/a']);
    started[0]!.end(recorded);
    await settle();
    expect(r.active()).toEqual([]);
  });

  it('says when it adopted a run its runner let go', async () => {
    const r = runs();
    const answer = r.trigger(target('a'));
    await settle();
    started[0]!.claim(true);
    expect((await answer).body).toEqual({ check: 'team-a/a', accepted: true, adopted: true });
  });

  it('answers 409 for a check with a triggered run in progress here, without starting another', async () => {
    const r = runs();
    const first = r.trigger(target('a'));
    await settle();
    started[0]!.claim();
    await first;
    expect(await r.trigger(target('a'))).toMatchObject({
      status: 409,
      body: {
        check: 'team-a/a',
        accepted: false,
        reason: 'a run of team-a/a triggered here is still in progress',
      },
    });
    expect(started).toHaveLength(1);
    // Once it ended, the check can be triggered again.
    started[0]!.end(recorded);
    await settle();
    const again = r.trigger(target('a'));
    await settle();
    started[1]!.claim();
    expect((await again).status).toBe(202);
  });

  it('answers 429 with Retry-After beyond maxRuns, without starting a run', async () => {
    const r = runs({ maxRuns: 2, retryAfterSeconds: 7 });
    for (const name of ['a', 'b']) {
      const answer = r.trigger(target(name));
      await settle();
      started.at(-1)!.claim();
      await answer;
    }
    expect(await r.trigger(target('c'))).toEqual({
      status: 429,
      body: {
        check: 'team-a/c',
        accepted: false,
        reason: '2 triggered runs are in progress here, the most allowed; retry later',
      },
      headers: { 'retry-after': '7' },
    });
    expect(started).toHaveLength(2);
  });

  it("answers 409 with the holder when another runner's run of the check is live", async () => {
    const r = runs();
    const answer = r.trigger(target('a'));
    await settle();
    started[0]!.end({
      kind: 'busy',
      runUuid: 'u-2',
      reason: 'another run of team-a/a is live (runner cron-1, until ...)',
    });
    expect(await answer).toMatchObject({
      status: 409,
      body: { accepted: false, reason: 'another run of team-a/a is live (runner cron-1, until ...)' },
    });
    await settle();
    expect(r.active()).toEqual([]);
  });

  it('answers 404 for a khcheck that does not exist', async () => {
    const r = runs();
    const answer = r.trigger(target('nope'));
    await settle();
    started[0]!.fail(new CheckNotFoundError('team-a', 'nope'));
    expect(await answer).toMatchObject({
      status: 404,
      body: {
        check: 'team-a/nope',
        accepted: false,
        reason: expect.stringMatching(/^khcheck team-a\/nope not found/),
      },
    });
  });

  it('answers 500 when the run cannot start, without the error text, and logs it', async () => {
    const log = { ...silentLog, error: vi.fn() };
    const r = runs({ log });
    const answer = r.trigger(target('a'));
    await settle();
    started[0]!.fail(new Error('connect ECONNREFUSED 10.0.0.1:6443'));
    expect(await answer).toMatchObject({
      status: 500,
      body: { accepted: false, reason: 'the run could not be started; retry' },
    });
    await settle();
    expect(log.error).toHaveBeenCalledWith(
      'triggered run failed',
      expect.objectContaining({ check: 'a', namespace: 'team-a' }),
    );
  });

  it('answers 200 with the outcome of a run that ended before a claim (an invalid khcheck)', async () => {
    const r = runs();
    const answer = r.trigger(target('a'));
    await settle();
    started[0]!.end({
      ...recorded,
      runUuid: '',
      outcome: { ...recorded.outcome, kind: 'ExecutionError', ok: false },
    });
    expect(await answer).toMatchObject({
      status: 200,
      body: { check: 'team-a/a', accepted: true, result: 'recorded', kind: 'ExecutionError' },
    });
  });

  it('answers 202 when the claim takes longer than acceptWaitMs; the run goes on', async () => {
    const r = runs({ acceptWaitMs: 5_000 });
    const answer = r.trigger(target('a'));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await answer).toMatchObject({
      status: 202,
      body: { accepted: true, reason: 'the run is starting' },
    });
    expect(r.active()).toEqual(['team-a/a']);
    expect(started[0]!.signal.aborted).toBe(false);
  });

  describe('with wait', () => {
    it('answers 200 with the outcome (never the run UUID) when the run ends in time', async () => {
      const r = runs();
      const answer = r.trigger(target('a', true));
      await settle();
      started[0]!.claim();
      await vi.advanceTimersByTimeAsync(30_000);
      started[0]!.end(recorded);
      const { status, body } = await answer;
      expect(status).toBe(200);
      expect(body).toEqual({
        check: 'team-a/a',
        accepted: true,
        result: 'recorded',
        kind: 'Succeeded',
        ok: true,
        errors: [],
        node: 'n',
        durationMs: 1200,
        adopted: false,
      });
      expect(JSON.stringify(body)).not.toContain('u-1');
    });

    it('answers 202 after maxWaitMs while the run goes on', async () => {
      const r = runs({ maxWaitMs: 60_000 });
      const answer = r.trigger(target('a', true));
      await settle();
      started[0]!.claim();
      await vi.advanceTimersByTimeAsync(60_000);
      expect(await answer).toMatchObject({
        status: 202,
        body: { accepted: true, reason: 'not finished after 60 s; its outcome will be in the khstate' },
      });
      expect(r.active()).toEqual(['team-a/a']);
    });

    it('answers 503 when the run was cut short (left for the next invocation)', async () => {
      const r = runs();
      const answer = r.trigger(target('a', true));
      await settle();
      started[0]!.claim();
      started[0]!.end({ kind: 'interrupted', runUuid: 'u-1', reason: 'khrun serve is shutting down' });
      expect(await answer).toMatchObject({
        status: 503,
        body: { accepted: true, result: 'interrupted' },
        headers: { 'retry-after': '5' },
      });
    });
  });

  describe('close', () => {
    it('refuses new triggers with 503 and lets runs that end within the grace finish', async () => {
      const r = runs();
      const answer = r.trigger(target('a'));
      await settle();
      started[0]!.claim();
      await answer;
      let closed = false;
      const closing = r.close({ graceMs: 10_000 }).then(() => {
        closed = true;
      });
      expect(await r.trigger(target('b'))).toMatchObject({
        status: 503,
        body: { accepted: false, reason: 'this server is shutting down; retry' },
        headers: { 'retry-after': '5' },
      });
      await vi.advanceTimersByTimeAsync(3_000);
      expect(closed).toBe(false);
      started[0]!.end(recorded);
      await closing;
      expect(started[0]!.signal.aborted).toBe(false);
      expect(started).toHaveLength(1);
    });

    it('cancels the runs still going after the grace, and returns once they stopped', async () => {
      const r = runs();
      const answer = r.trigger(target('a'));
      await settle();
      started[0]!.claim();
      await answer;
      let closed = false;
      const closing = r.close({ graceMs: 10_000 }).then(() => {
        closed = true;
      });
      await vi.advanceTimersByTimeAsync(10_000);
      expect(started[0]!.signal.aborted).toBe(true);
      expect(String(started[0]!.signal.reason)).toMatch(/shutting down/);
      expect(closed).toBe(false);
      started[0]!.end({ kind: 'interrupted', runUuid: 'u-1', reason: 'cancelled' });
      await closing;
      expect(r.active()).toEqual([]);
    });

    it('returns at once with nothing running, leaving no timer behind', async () => {
      await runs().close({ graceMs: 10_000 });
      expect(vi.getTimerCount()).toBe(0);
    });
  });
});
