import type { CasLoop } from '../kube/cas.ts';
import type { DispatchClaim } from '../state/dispatch-claim.ts';

/** The parts of a compare-and-swap loop a claim store's caller gives; the store supplies read and persist. */
export type ClaimLoop<S, R> = Pick<CasLoop<S, R>, 'writer' | 'maxAttempts' | 'decide' | 'initial' | 'log'>;

/**
 * Where one object's dispatch claim is kept: a khstate (khchecks, khjobs) or the HealthCheck itself. S is
 * the version of the object a claim is read from and written on.
 */
export interface ClaimStore<S> {
  /**
   * A compare-and-swap loop on the object (updateWithRetry): each write has the version it was decided on
   * as precondition, a conflict reads again and decides again, RetriesExhausted after maxAttempts.
   */
  update<R>(loop: ClaimLoop<S, R>): Promise<R>;
  /** The dispatch claim a version holds (none for a missing object). Pure. */
  claimOf(current: S | null): DispatchClaim | undefined;
  /**
   * The version to write: current with claim set, or removed (undefined), all else kept. Pure. A store
   * whose objects are never created by a claim (HealthChecks) is never given a missing one, since its
   * kind never finds a missing object due.
   */
  withClaim(current: S | null, claim: DispatchClaim | undefined): S;
}
