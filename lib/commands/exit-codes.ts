import { EXIT } from '../core/exit-codes.ts';
import type { IterationResult } from '../run/iteration.ts';

export function exitCodeFor(result: IterationResult): number {
  return result.kind === 'interrupted' ? EXIT.runnerError : EXIT.ok;
}

/** The outcome as one JSON object for --output json (the run UUID is omitted: it is a credential). */
export function resultJson(result: IterationResult, check: { namespace: string; name: string }) {
  const base = { check: `${check.namespace}/${check.name}`, result: result.kind };
  switch (result.kind) {
    case 'recorded':
      return { ...base, ...result.outcome, adopted: result.adopted };
    case 'busy':
    case 'superseded':
    case 'interrupted':
      return { ...base, reason: result.reason };
    case 'check-deleted':
      return base;
  }
}
