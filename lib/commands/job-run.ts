import { EXIT } from '../core/exit-codes.ts';
import { runKhJobInvocation } from '../job/invocation.ts';
import type { JobRunResult } from '../job/run-khjob.ts';
import type { RunCheckOptions } from '../run/invocation.ts';
import { exitCodeFor, resultJson } from './exit-codes.ts';

/** `khrun run --job NAME`: the same options as a khcheck's run, the khjob named instead. */
export const khjobRun =
  (jobName: string) =>
  (opts: RunCheckOptions): Promise<JobRunResult> =>
    runKhJobInvocation({ ...opts, jobName });

/** A khjob that already ran is nothing to do, as a live run of a check is: exit 0. */
export function runExitCode(result: JobRunResult): number {
  return result.kind === 'already-ran' ? EXIT.ok : exitCodeFor(result);
}

/** --output json of a run, a khjob's included (its run UUID omitted, as for checks: a credential). */
export function runResultJson(result: JobRunResult, ref: { namespace: string; name: string }) {
  if (result.kind !== 'already-ran') return resultJson(result, ref);
  return { check: `${ref.namespace}/${ref.name}`, result: result.kind, reason: result.reason };
}
