import { readKhState } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { type OwnerMarker, readOwnerMarker } from './owner-marker.ts';

/**
 * Whether khrun may run a check, decided from its khstate alone (pure): the read the run's claim makes
 * anyway, so the guard costs no API request.
 *
 * Kuberhealthy v2 leaves a plain mark on every run: it writes the khstate's spec.uuid with its own run's
 * UUID before it creates the checker pod, and AuthoritativePod with its pod's name when it records. khrun
 * writes spec.uuid too, but always together with its own annotations (the active run, then the last
 * outcome), so a spec.uuid that none of khrun's records names is a run of someone else's.
 *
 * Gap: a Kuberhealthy that has not yet started a run of the check leaves no trace; khrun then runs it,
 * and refuses from Kuberhealthy's first run on (at most one run of each done by both).
 *
 * Kuberhealthy v3 leaves a plainer one: its leader's informer puts its finalizer on every HealthCheck it
 * sees, at once and before the first run, and only removes it when the HealthCheck is deleted. So a
 * HealthCheck's state view carrying V3_FINALIZER without khrun's owner mark is v3's, between its runs too.
 */
export const V3_FINALIZER = 'kuberhealthy.io/healthcheck';

export type Ownership =
  | { kind: 'khrun'; why: 'no-kuberhealthy-run' | 'taken-over' | 'forced' }
  | {
      kind: 'kuberhealthy';
      why: 'kuberhealthy-ran-last' | 'handed-back' | 'kuberhealthy-resumed' | 'v3-finalizer' | 'v3-recorded';
      /** The Kuberhealthy pod that recorded last (AuthoritativePod); '' when it has not recorded yet. */
      pod: string;
      /** namespace/name of its Deployment, when the owner mark names it. */
      deployment?: string;
      /** The foreign run UUID found in spec.uuid (the refusal message shows only its first 8 characters). */
      runUuid: string;
    };

export function decideOwnership(state: KhState | null, opts: { takeOver: boolean }): Ownership {
  if (opts.takeOver) return { kind: 'khrun', why: 'forced' };
  if (!state) return { kind: 'khrun', why: 'no-kuberhealthy-run' };
  const marker = readOwnerMarker(state);
  const model = readKhState(state);
  const pod = model.spec.AuthoritativePod;
  if (marker?.owner === 'kuberhealthy') {
    return { kind: 'kuberhealthy', why: 'handed-back', pod, deployment: marker.to, runUuid: model.spec.uuid };
  }
  const foreign = foreignRunUuid(state, marker);
  if (!marker && state.metadata.finalizers?.includes(V3_FINALIZER)) {
    return { kind: 'kuberhealthy', why: 'v3-finalizer', pod, runUuid: foreign ?? '' };
  }
  if (!marker && foreign === undefined && v3RecordedAlone(state)) {
    return { kind: 'kuberhealthy', why: 'v3-recorded', pod, runUuid: '' };
  }
  if (foreign === undefined) {
    return { kind: 'khrun', why: marker ? 'taken-over' : 'no-kuberhealthy-run' };
  }
  return {
    kind: 'kuberhealthy',
    why: marker ? 'kuberhealthy-resumed' : 'kuberhealthy-ran-last',
    pod,
    ...(marker ? { deployment: marker.from } : {}),
    runUuid: foreign,
  };
}

/**
 * A HealthCheck whose status holds a recorded result while khrun has recorded none (no history, no last
 * outcome): v3 ran it. The finalizer alone is not enough: v3.0.0 adds it from its informer with a plain
 * update that loses to its own scheduler's status write now and then (409, never retried), so a
 * HealthCheck v3 runs may carry none.
 */
function v3RecordedAlone(state: KhState): boolean {
  if (state.kind !== 'HealthCheck' || !state.spec?.LastRun) return false;
  const model = readKhState(state);
  return !model.lastOutcome && model.history.length === 0;
}

/**
 * spec.uuid when no record of khrun's (active run, accepted report, last outcome, and the take-over mark
 * given) names it. Without the mark: the run Kuberhealthy last started, even on a khstate taken over.
 */
export function foreignRunUuid(state: KhState, marker: OwnerMarker | undefined): string | undefined {
  const model = readKhState(state);
  const uuid = model.spec.uuid;
  if (!uuid) return undefined;
  const known = [
    model.run?.uuid,
    model.report?.uuid,
    model.lastOutcome?.uuid,
    marker?.owner === 'khrun' ? marker.uuid : undefined,
  ];
  return known.includes(uuid) ? undefined : uuid;
}

/** The refusal as a value a runner returns: why, in words, and what to do. */
export interface Refusal {
  kind: 'refused';
  reason: string;
  ownership: Extract<Ownership, { kind: 'kuberhealthy' }>;
}
