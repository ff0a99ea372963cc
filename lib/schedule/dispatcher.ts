import type { CheckRef } from './run-job.ts';

/** Sends one invocation of the runner for a check: a Job (cluster mode) or an async Lambda call (AWS). */
export interface Dispatcher {
  /** The name the invocation will have, recorded in the claim before it is sent. */
  refFor(check: CheckRef, nowMs: number): string;
  dispatch(check: CheckRef, ref: string): Promise<void>;
  /** Whether it can send a khjob's run (CheckRef kind khjob). */
  runsKhJobs?: boolean;
  /** Whether it can send a HealthCheck's run (CheckRef kind healthcheck). */
  runsHealthChecks?: boolean;
  /**
   * The batch form: one invocation drives several khchecks (a batch Job, one Lambda event of "checks").
   * Absent: every check is sent on its own, whatever the batch size.
   */
  batch?: {
    /** The batch's invocation name from an id unique to the tick; recorded in each member's claim before it is sent. */
    refFor(batchId: string, nowMs: number): string;
    /** Sends the members that were claimed (khchecks only; at least one). */
    dispatch(checks: readonly CheckRef[], ref: string): Promise<void>;
  };
}
