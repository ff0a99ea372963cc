import type { KhState } from '../state/resources.ts';

/**
 * Who runs a check, as `khrun takeover` and `khrun handback` left it: an annotation on the khstate, where
 * khrun keeps all its bookkeeping (the v2.7 schema prunes unknown spec fields). Kuberhealthy v2.7.1 keeps
 * it while it starts a run (setUUID updates the object it read) and drops it, with every khrun.dev
 * annotation, when it records a result (crd.go writes a new object): from then on its spec.uuid is the
 * evidence (ownership.ts).
 */
export const OWNER_ANNOTATION = 'khrun.dev/owner';

export type OwnerMarker =
  /**
   * khrun took the check over from the Kuberhealthy Deployment `from` (namespace/name). uuid is the
   * khstate's spec.uuid at that moment (Kuberhealthy's last run): a later spec.uuid that is neither it nor
   * one of khrun's own runs means Kuberhealthy runs the check again.
   */
  | { owner: 'khrun'; from: string; atMs: number; uuid: string }
  /** khrun handed the check back to the Kuberhealthy Deployment `to`: khrun runs it no more. */
  | { owner: 'kuberhealthy'; to: string; atMs: number };

/** The mark, or undefined when absent or damaged (a hand-edited mark is not trusted either way). */
export function readOwnerMarker(state: KhState | null): OwnerMarker | undefined {
  const text = state?.metadata.annotations?.[OWNER_ANNOTATION];
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    if (typeof v.atMs !== 'number' || !Number.isFinite(v.atMs)) return undefined;
    if (v.owner === 'khrun' && typeof v.from === 'string' && typeof v.uuid === 'string')
      return { owner: 'khrun', from: v.from, atMs: v.atMs, uuid: v.uuid };
    if (v.owner === 'kuberhealthy' && typeof v.to === 'string')
      return { owner: 'kuberhealthy', to: v.to, atMs: v.atMs };
  } catch {
    // Treated as absent: the evidence in the spec still decides.
  }
  return undefined;
}

/** The khstate carrying the mark; everything else (spec, khrun's annotations, resourceVersion) unchanged. */
export function withOwnerMarker(state: KhState, marker: OwnerMarker): KhState {
  return {
    ...state,
    metadata: {
      ...state.metadata,
      annotations: { ...(state.metadata.annotations ?? {}), [OWNER_ANNOTATION]: JSON.stringify(marker) },
    },
  };
}
