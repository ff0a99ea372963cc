import { ANNOTATION, type DispatchClaim, updateKhState } from './khstate.ts';
import type { KhState } from './resources.ts';

export { type DispatchClaim, readDispatchClaim } from './khstate.ts';
export const DISPATCH_ANNOTATION = ANNOTATION.dispatch;

/** The khstate with the claim set (resourceVersion kept as the write's precondition). */
export function withDispatchClaim(state: KhState, claim: DispatchClaim): KhState {
  return updateKhState(state, (m) => ({ ...m, dispatch: claim }));
}

/** The khstate with the claim removed, for a dispatch that failed before anything was sent. */
export function withoutDispatchClaim(state: KhState): KhState {
  return updateKhState(state, (m) => ({ ...m, dispatch: undefined }));
}
