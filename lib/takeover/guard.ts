import type { KhState } from '../state/resources.ts';
import { decideOwnership } from './ownership.ts';
import { refusalFor } from './refusal.ts';

/**
 * The runner's guard (pure): given the khstate its claim reads, the reason a run must not start because a
 * Kuberhealthy runs the check, or undefined. takeOver (--take-over, KHRUN_TAKE_OVER) turns it off.
 */
export function kuberhealthyGuard(
  check: { namespace: string; name: string },
  opts: { takeOver: boolean },
): ((state: KhState | null) => string | undefined) | undefined {
  if (opts.takeOver) return undefined;
  return (state) => {
    const ownership = decideOwnership(state, opts);
    return ownership.kind === 'kuberhealthy' ? refusalFor(check, ownership).reason : undefined;
  };
}
