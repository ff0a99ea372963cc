import { EXIT } from '../core/exit-codes.ts';
import type { RunResult } from '../kinds/kind.ts';
import { exitCodeFor, resultJson } from './exit-codes.ts';

/** A khjob that already ran is nothing to do, as a live run of a check is: exit 0. */
export function runExitCode(result: RunResult): number {
  return result.kind === 'already-ran' ? EXIT.ok : exitCodeFor(result);
}

/** --output json of a run, a khjob's included (its run UUID omitted, as for checks: a credential). */
export function runResultJson(result: RunResult, ref: { namespace: string; name: string }) {
  if (result.kind !== 'already-ran') return resultJson(result, ref);
  return { check: `${ref.namespace}/${ref.name}`, result: result.kind, reason: result.reason };
}
