import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { BatchEntry } from '../../lib/batch/batch-entry.ts';
import { runBatch } from '../../lib/batch/run-batch.ts';
import type { Log } from '../../lib/core/log.ts';
import type { TargetRun } from '../../lib/kinds/kind.ts';
import { CheckNotFoundError } from '../../lib/run/errors.ts';
import type { IterationResult } from '../../lib/run/iteration.ts';
import { OutcomeKind } from '../../lib/state/outcome-kind.ts';

// The batch driver over a scripted session (the real session is exercised end to end by
// test/integration/batch.test.ts): each check's fault stays its own entry, a hung check holds only its own
// slot, every run gets a signal of its own that follows the invocation's, and log lines name their check.

const recorded = (name: string): IterationResult => ({
  kind: 'recorded',
  runUuid: `uuid-${name}`,
  adopted: false,
  outcome: { kind: OutcomeKind.Succeeded, ok: true, errors: [], node: '', durationMs: 1 },
});

/** A session whose checks behave by name: ok, boom (throws), missing (not found), hang (until aborted). */
function scriptedSession() {
  const signals = new Map<string, AbortSignal>();
  const finished: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const run = async (run: TargetRun): Promise<IterationResult> => {
    const check = { ...run, namespace: run.target.namespace, checkName: run.target.name };
    signals.set(check.checkName, check.signal);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    check.log?.info('claimed');
    try {
      await Promise.resolve();
      if (check.checkName.startsWith('boom')) throw new Error('update of khstate conflicted 8 times\nstack');
      if (check.checkName.startsWith('missing'))
        throw new CheckNotFoundError(check.namespace, check.checkName);
      if (check.checkName.startsWith('hang')) {
        await new Promise<void>((resolve) =>
          check.signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        return { kind: 'interrupted', runUuid: 'uuid-hang', reason: String(check.signal.reason) };
      }
      return recorded(check.checkName);
    } finally {
      inFlight--;
      finished.push(check.checkName);
    }
  };
  return { session: { run }, signals, finished, maxInFlight: () => maxInFlight };
}

function recordingLog() {
  const lines: { level: string; message: string; extra?: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, extra?: Record<string, unknown>) =>
    lines.push({ level, message, extra });
  const log: Log = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
  return { log, lines };
}

const entries = (...names: string[]): BatchEntry[] => names.map((name) => ({ namespace: 'ns', name }));

async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setImmediate(r));
  }
}

describe('runBatch', () => {
  it('gives each check its own entry, in the list order, whatever the others did', async () => {
    const s = scriptedSession();
    const { log, lines } = recordingLog();
    const invocation = new AbortController();
    const done = runBatch(
      { session: s.session, log, signal: invocation.signal },
      entries('ok-1', 'boom', 'hang', 'missing', 'ok-2'),
    );
    // The hung check holds nobody up: every other check has finished while it still waits.
    await until(() => s.finished.length === 4);
    expect(s.finished).not.toContain('hang');
    invocation.abort(new Error('received SIGTERM'));
    const results = await done;
    expect(results.map((r) => [r.check.name, r.outcome.kind])).toEqual([
      ['ok-1', 'ran'],
      ['boom', 'failed'],
      ['hang', 'ran'],
      ['missing', 'not-found'],
      ['ok-2', 'ran'],
    ]);
    expect(results[1]?.outcome).toEqual({ kind: 'failed', error: 'update of khstate conflicted 8 times' });
    expect(results[2]?.outcome).toMatchObject({ kind: 'ran', result: { kind: 'interrupted' } });
    expect(results[3]?.outcome).toMatchObject({
      reason: expect.stringMatching(/khcheck ns\/missing not found/),
    });
    expect(lines.find((l) => l.message === 'batch finished')?.extra).toEqual({
      checks: 5,
      results: { recorded: 2, failed: 1, interrupted: 1, 'not-found': 1 },
    });
  });

  it("gives every run a signal of its own that the invocation's aborts, and one listener on it in all", async () => {
    const s = scriptedSession();
    const invocation = new AbortController();
    const done = runBatch(
      { session: s.session, log: recordingLog().log, signal: invocation.signal },
      entries('hang-1', 'hang-2', 'hang-3'),
    );
    await until(() => s.signals.size === 3);
    const own = [...s.signals.values()];
    expect(new Set(own).size).toBe(3);
    expect(own).not.toContain(invocation.signal);
    expect(getEventListeners(invocation.signal, 'abort')).toHaveLength(1);
    const reason = new Error('budget');
    invocation.abort(reason);
    const results = await done;
    expect(own.every((sig) => sig.aborted && sig.reason === reason)).toBe(true);
    expect(results.every((r) => r.outcome.kind === 'ran' && r.outcome.result.kind === 'interrupted')).toBe(
      true,
    );
    expect(getEventListeners(invocation.signal, 'abort')).toHaveLength(0);
  });

  it('runs at most `concurrency` checks at once; those never started when the invocation stops are not-started', async () => {
    const s = scriptedSession();
    const all = await runBatch(
      { session: s.session, log: recordingLog().log, signal: new AbortController().signal, concurrency: 2 },
      entries('ok-1', 'ok-2', 'ok-3', 'ok-4', 'ok-5'),
    );
    expect(all.every((r) => r.outcome.kind === 'ran')).toBe(true);
    expect(s.maxInFlight()).toBe(2);

    const queued = scriptedSession();
    const invocation = new AbortController();
    const done = runBatch(
      { session: queued.session, log: recordingLog().log, signal: invocation.signal, concurrency: 1 },
      entries('hang', 'ok-1', 'ok-2'),
    );
    await until(() => queued.signals.size === 1);
    invocation.abort(new Error('received SIGTERM'));
    const results = await done;
    expect(results.map((r) => r.outcome.kind)).toEqual(['ran', 'not-started', 'not-started']);
    expect([...queued.signals.keys()]).toEqual(['hang']);
  });

  it("names the check in each of its run's log lines", async () => {
    const s = scriptedSession();
    const { log, lines } = recordingLog();
    await runBatch({ session: s.session, log, signal: new AbortController().signal }, [
      { namespace: 'a', name: 'ok-1' },
      { namespace: 'b', name: 'boom' },
    ]);
    expect(lines.filter((l) => l.message === 'claimed').map((l) => l.extra)).toEqual([
      { check: 'ok-1', namespace: 'a' },
      { check: 'boom', namespace: 'b' },
    ]);
    expect(lines.find((l) => l.message === 'batch check failed')?.extra).toMatchObject({
      check: 'boom',
      namespace: 'b',
    });
  });
});
