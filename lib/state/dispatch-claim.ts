import { nextKhState } from './khstate.ts';
import type { KhState } from './resources.ts';

/**
 * The dispatch claim: which tick sent which invocation for a check, and when. It is written with a
 * compare-and-swap on the khstate's resourceVersion before the invocation is sent, so of two ticks that
 * find a check due at once only one wins the write and dispatches; the loser re-reads and sees it.
 */
export const DISPATCH_ANNOTATION = 'khrun.dev/dispatched' as const;

export interface DispatchClaim {
  atMs: number;
  /** The Job name, or the Lambda function the invocation went to. */
  ref: string;
  /** The tick that wrote it (its pod or Lambda request). */
  by: string;
}

export function readDispatchClaim(state: KhState | null): DispatchClaim | undefined {
  const text = state?.metadata.annotations?.[DISPATCH_ANNOTATION];
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as Partial<DispatchClaim>;
    if (typeof v.atMs === 'number' && Number.isFinite(v.atMs) && typeof v.ref === 'string') {
      return { atMs: v.atMs, ref: v.ref, by: typeof v.by === 'string' ? v.by : '' };
    }
  } catch {
    // A hand-edited annotation is treated as absent: at worst one extra dispatch, which the run claim absorbs.
  }
  return undefined;
}

/** The khstate with the claim set (resourceVersion kept as the write's precondition). */
export function withDispatchClaim(state: KhState, claim: DispatchClaim): KhState {
  return nextKhState(state, {}, { [DISPATCH_ANNOTATION]: JSON.stringify(claim) });
}

/** The khstate with the claim removed, for a dispatch that failed before anything was sent. */
export function withoutDispatchClaim(state: KhState): KhState {
  return nextKhState(state, {}, { [DISPATCH_ANNOTATION]: undefined });
}
