import { abortableDelay } from '../core/abort.ts';
import { type Log, logWithKeys } from '../core/log.ts';
import type { RunResult } from '../kinds/kind.ts';
import { loggableError } from '../kube/errors.ts';
import { CheckNotFoundError } from '../run/errors.ts';
import type { GateStatus, TriggerTarget } from './gate.ts';

/** Starts one iteration of a check; calls onClaimed once the run is claimed (or adopted) in its khstate. */
export type StartRun = (
  target: { namespace: string; checkName: string },
  hooks: { signal: AbortSignal; onClaimed: (adopted: boolean) => void },
) => Promise<RunResult>;

export interface TriggerRunsOptions {
  start: StartRun;
  /** Triggered runs in progress at once in this process; one more is answered 429. */
  maxRuns: number;
  /** The longest a `wait=true` request is held for the outcome before it is answered 202. */
  maxWaitMs: number;
  /** How long a trigger waits for its run to be claimed before it answers 202 regardless (default 10 s). */
  acceptWaitMs?: number;
  /** Retry-After of 429 and 503, in seconds (default 5). */
  retryAfterSeconds?: number;
  /** The answer's body for a run that finished while the request was held (the CLI's --output json). */
  outcomeJson: (result: RunResult, target: TriggerTarget) => Record<string, unknown>;
  log: Log;
}

export interface TriggerAnswer {
  status: 200 | 202 | GateStatus | 404 | 409 | 429 | 500 | 502 | 503;
  /** `check` is absent from the gate's refusals: nothing a refused caller sent is echoed back but the reason. */
  body: { check?: string; accepted: boolean; reason?: string; [field: string]: unknown };
  headers: Record<string, string>;
}

export interface TriggerRuns {
  /** Starts a run of the target (a target the gate let through), and says what became of the request. */
  trigger(target: TriggerTarget): Promise<TriggerAnswer>;
  /** Checks with a triggered run in progress here, as `<namespace>/<name>`. */
  active(): string[];
  /**
   * Refuses new triggers (503), lets runs in progress finish for up to graceMs, then cancels the rest
   * (each is left resumable: its claim released for the next invocation) and waits for them to stop.
   */
  close(opts: { graceMs: number }): Promise<void>;
}

type Started =
  | { kind: 'claimed'; adopted: boolean }
  | { kind: 'finished'; result: RunResult }
  | { kind: 'failed'; error: unknown }
  | { kind: 'pending' };

/** The first of the promises to settle, or `fallback` after ms; the timer is always cleared. */
async function within<T>(ms: number, fallback: T, promises: Promise<T>[]): Promise<T> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      ...promises,
      abortableDelay(ms, timer.signal).then(
        () => fallback,
        () => fallback,
      ),
    ]);
  } finally {
    timer.abort();
  }
}

/**
 * The action behind the trigger: one iteration per accepted request, run in the background of this
 * process and bounded by it. At most one triggered run per check (409) and maxRuns in all (429); the
 * answer comes once the run is claimed (202), or at once when it cannot be (409 busy elsewhere, 404 no
 * such khcheck); with `wait`, when it is recorded (200), or 202 after maxWaitMs while it goes on.
 */
export function triggerRuns(opts: TriggerRunsOptions): TriggerRuns {
  const acceptWaitMs = opts.acceptWaitMs ?? 10_000;
  const retryAfter = { 'retry-after': String(opts.retryAfterSeconds ?? 5) };
  const runs = new Map<string, { controller: AbortController; settled: Promise<void> }>();
  let closing = false;

  const answer = (
    status: TriggerAnswer['status'],
    check: string,
    fields: Record<string, unknown>,
    headers: Record<string, string> = {},
  ): TriggerAnswer => ({ status, body: { check, accepted: false, ...fields }, headers });

  /** A run that ended while its request was held: busy elsewhere 409, cut short 503, else its outcome. */
  function finished(result: RunResult, target: TriggerTarget): TriggerAnswer {
    const check = `${target.namespace}/${target.checkName}`;
    if (result.kind === 'busy') return answer(409, check, { accepted: false, reason: result.reason });
    const json = { accepted: true, ...opts.outcomeJson(result, target) };
    if (result.kind === 'interrupted') return answer(503, check, json, retryAfter);
    return answer(200, check, json);
  }

  async function trigger(target: TriggerTarget): Promise<TriggerAnswer> {
    const check = `${target.namespace}/${target.checkName}`;
    if (closing) {
      return answer(
        503,
        check,
        { accepted: false, reason: 'this server is shutting down; retry' },
        retryAfter,
      );
    }
    if (runs.has(check)) {
      return answer(409, check, {
        accepted: false,
        reason: `a run of ${check} triggered here is still in progress`,
      });
    }
    if (runs.size >= opts.maxRuns) {
      return answer(
        429,
        check,
        {
          accepted: false,
          reason: `${runs.size} triggered runs are in progress here, the most allowed; retry later`,
        },
        retryAfter,
      );
    }
    const log = logWithKeys(opts.log, { check: target.checkName, namespace: target.namespace });
    const controller = new AbortController();
    let onClaimed: (adopted: boolean) => void = () => {};
    const claimed = new Promise<Started>((resolve) => {
      onClaimed = (adopted) => resolve({ kind: 'claimed', adopted });
    });
    const hooks = { signal: controller.signal, onClaimed: (adopted: boolean) => onClaimed(adopted) };
    const run = (async () => opts.start(target, hooks))();
    const ended: Promise<Started> = run.then(
      (result) => ({ kind: 'finished', result }),
      (error: unknown) => ({ kind: 'failed', error }),
    );
    const entry = { controller, settled: ended.then(() => undefined) };
    runs.set(check, entry);
    void ended.then((end) => {
      if (runs.get(check) === entry) runs.delete(check);
      if (end.kind === 'failed' && !(end.error instanceof CheckNotFoundError))
        log.error('triggered run failed', { error: loggableError(end.error) });
      else if (end.kind === 'finished') log.info('triggered run ended', { result: end.result.kind });
    });

    const started = await within<Started>(acceptWaitMs, { kind: 'pending' }, [claimed, ended]);
    switch (started.kind) {
      case 'pending':
        // The API server is slow to let the run be claimed: the run goes on, bounded by its own deadline.
        return answer(202, check, { accepted: true, reason: 'the run is starting' });
      case 'failed':
        if (started.error instanceof CheckNotFoundError) {
          return answer(404, check, { accepted: false, reason: started.error.message });
        }
        return answer(500, check, { accepted: false, reason: 'the run could not be started; retry' });
      case 'finished':
        // Ended before it was claimed: busy with another runner's run, or an invalid khcheck recorded.
        return finished(started.result, target);
      case 'claimed': {
        const claimedFields = started.adopted ? { accepted: true, adopted: true } : { accepted: true };
        if (!target.wait) return answer(202, check, claimedFields);
        const end = await within<Started>(opts.maxWaitMs, { kind: 'pending' }, [ended]);
        if (end.kind === 'finished') return finished(end.result, target);
        if (end.kind === 'failed') {
          return answer(500, check, {
            accepted: true,
            reason: 'the run failed; it is left for the next invocation',
          });
        }
        return answer(202, check, {
          ...claimedFields,
          reason: `not finished after ${Math.round(opts.maxWaitMs / 1000)} s; its outcome will be in the khstate`,
        });
      }
    }
  }

  return {
    trigger,
    active: () => [...runs.keys()],
    async close({ graceMs }) {
      closing = true;
      const all = () => Promise.all([...runs.values()].map((r) => r.settled));
      await within(graceMs, undefined, [all().then(() => undefined)]);
      for (const { controller } of runs.values()) controller.abort(new Error('khrun serve is shutting down'));
      await all();
    },
  };
}
