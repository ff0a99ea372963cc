import type { BatchEntry } from '../batch/batch-entry.ts';
import { checkResultJson } from '../batch/batch-result.ts';
import { runBatchInSession } from '../batch/run-batch.ts';
import { khjobRun, runResultJson } from '../commands/job-run.ts';
import { SINGLE_RUN } from '../commands/run-batch.ts';
import type { RunKind } from '../config/run-check-event.ts';
import { runHealthCheck } from '../healthcheck/run-healthcheck.ts';
import type { JobRunResult } from '../job/run-khjob.ts';
import { JobNotFoundError } from '../job/run-khjob.ts';
import { CheckNotFoundError } from '../run/errors.ts';
import { type RunCheckOptions, runCheck } from '../run/invocation.ts';
import { sessionSettings } from '../run/runner-session.ts';

/** The runner of each kind: the engine `khrun run --check`, `--job` and `--healthcheck` use. */
export function runnerFor(kind: RunKind, name: string): (opts: RunCheckOptions) => Promise<JobRunResult> {
  if (kind === 'khjob') return khjobRun(name);
  return kind === 'healthcheck' ? runHealthCheck : runCheck;
}

/** What a runCheck invocation returns: `khrun run --output json`'s object, or not-found. */
export type RunInvocationJson = ReturnType<typeof runResultJson> | NotFoundJson;
interface NotFoundJson {
  check: string;
  result: 'not-found';
  reason: string;
}

/**
 * One runCheck invocation: the object of the event's kind, run as `khrun run` runs it. A failed check is
 * data (returned, with `khrun run`'s JSON); a missing object is `not-found`, returned too, so a deleted
 * check's queued invocation is no error. Only runner failures throw: the invocation fails, visibly.
 */
export async function runFromEvent(
  kind: RunKind,
  opts: RunCheckOptions,
  run: (opts: RunCheckOptions) => Promise<JobRunResult> = runnerFor(kind, opts.checkName),
): Promise<RunInvocationJson> {
  const ref = { namespace: opts.namespace, name: opts.checkName };
  try {
    return runResultJson(await run(opts), ref);
  } catch (error) {
    if (error instanceof CheckNotFoundError || error instanceof JobNotFoundError)
      return { check: `${ref.namespace}/${ref.name}`, result: 'not-found', reason: error.message };
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
  opts: Omit<RunCheckOptions, 'namespace' | 'checkName' | 'adapt' | 'onPhase' | 'timings'> & {
    checks: BatchEntry[];
  },
): Promise<{ checks: object[] }> {
  const results = await runBatchInSession({ ...sessionSettings(opts), signal: opts.signal }, opts.checks);
  return { checks: results.map((r) => checkResultJson(r, SINGLE_RUN)) };
}
