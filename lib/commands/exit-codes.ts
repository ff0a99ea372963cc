import { EXIT } from '../core/exit-codes.ts';
import type { IterationResult } from '../run/iteration.ts';

/**
 * A refused run (Kuberhealthy runs the check: lib/takeover) is exit 2, as a configuration error: nothing
 * changes until someone takes over, so a runner Job fails at once (podFailurePolicy) instead of retrying.
 */
export function exitCodeFor(result: IterationResult): number {
  if (result.kind === 'refused') return EXIT.usage;
  return result.kind === 'interrupted' ? EXIT.runnerError : EXIT.ok;
}

/** The outcome as one JSON object for --output json (the run UUID is omitted: it is a credential). */
export function resultJson(result: IterationResult, check: { namespace: string; name: string }) {
  const base = { check: `${check.namespace}/${check.name}`, result: result.kind };
  switch (result.kind) {
    case 'recorded':
      return { ...base, ...result.outcome, adopted: result.adopted };
    case 'busy':
    case 'refused':
    case 'superseded':
    case 'interrupted':
      return { ...base, reason: result.reason };
    case 'check-deleted':
      return base;
  }
}
