import { khjobRun, runResultJson } from '../commands/job-run.ts';
import type { RunKind } from '../config/run-check-event.ts';
import { runHealthCheck } from '../healthcheck/run-healthcheck.ts';
import type { JobRunResult } from '../job/run-khjob.ts';
import { JobNotFoundError } from '../job/run-khjob.ts';
import { CheckNotFoundError } from '../run/errors.ts';
import { type RunCheckOptions, runCheck } from '../run/invocation.ts';

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
