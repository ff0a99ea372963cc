import type { IterationResult } from '../run/iteration.ts';

/**
 * 0: the iteration finished and its outcome is recorded (a failed check is data), or it was skipped
 * because another run is live; 1: the runner could not finish or record; 2: usage or configuration error.
 */
export const EXIT = { ok: 0, runnerError: 1, usage: 2 } as const;

export function exitCodeFor(result: IterationResult): number {
  return result.kind === 'interrupted' ? EXIT.runnerError : EXIT.ok;
}

/** The outcome as one JSON object for --output json (the run UUID is omitted: it is a credential). */
export function resultJson(result: IterationResult, check: { namespace: string; name: string }) {
  const base = { check: `${check.namespace}/${check.name}`, result: result.kind };
  switch (result.kind) {
    case 'recorded':
      return { ...base, ...result.outcome, adopted: result.adopted };
    case 'skipped':
      return { ...base, reason: result.reason };
    case 'interrupted':
      return { ...base, reason: result.reason };
    case 'check-deleted':
      return base;
  }
}
