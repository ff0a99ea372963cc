import type { BatchEntry } from '../batch/batch-entry.ts';
import { checkResultJson } from '../batch/batch-result.ts';
import { runBatchInSession } from '../batch/run-batch.ts';
import { runResultJson } from '../commands/job-run.ts';
import { SINGLE_RUN } from '../commands/run-batch.ts';
import type { RunTarget } from '../core/run-target.ts';
import { JobNotFoundError } from '../job/run-khjob.ts';
import type { RunResult, TargetRun } from '../kinds/kind.ts';
import { CheckNotFoundError } from '../run/errors.ts';
import { runTarget } from '../session/run-target.ts';
import type { SessionSettings } from '../session/session.ts';

/** What a runCheck invocation returns: `khrun run --output json`'s object, or not-found. */
export type RunInvocationJson = ReturnType<typeof runResultJson> | NotFoundJson;
interface NotFoundJson {
  check: string;
  result: 'not-found';
  reason: string;
}

type RunOne = (settings: SessionSettings, run: TargetRun) => Promise<RunResult>;

/**
 * One runCheck invocation: the event's object, run as `khrun run` runs it. A failed check is data
 * (returned, with `khrun run`'s JSON); a missing object is `not-found`, returned too, so a deleted check's
 * queued invocation is no error. Only runner failures throw: the invocation fails, visibly.
 */
export async function runFromEvent(
  target: RunTarget,
  settings: SessionSettings & { signal: AbortSignal },
  run: RunOne = runTarget,
): Promise<RunInvocationJson> {
  try {
    return runResultJson(await run(settings, { target, signal: settings.signal }), target);
  } catch (error) {
    if (error instanceof CheckNotFoundError || error instanceof JobNotFoundError)
      return { check: `${target.namespace}/${target.name}`, result: 'not-found', reason: error.message };
    throw error;
  }
}

/**
 * One runCheck invocation for a batch of khchecks (`{"checks": [...]}`): one session (one API client; pods
 * report to the report function's URL), every check a full iteration of its own, and one entry per check
 * in the event's order, each as one check's invocation returns it, a missing khcheck as not-found and a
 * runner failure as failed with its error. Nothing throws for one check: the other entries are the
 * invocation's result too, and a run left open by a failure is adopted by the next invocation.
 */
export async function runBatchFromEvent(
  opts: SessionSettings & { signal: AbortSignal; checks: BatchEntry[] },
): Promise<{ checks: object[] }> {
  const results = await runBatchInSession(opts, opts.checks);
  return { checks: results.map((r) => checkResultJson(r, SINGLE_RUN)) };
}
