/**
 * The exit codes every khrun command keeps to (the CronJob's podFailurePolicy relies on 2):
 * 0: the iteration finished and its outcome is recorded (a failed check is data), or it was skipped
 * because another run is live; 1: the runner could not finish or record; 2: usage or configuration error.
 */
export const EXIT = { ok: 0, runnerError: 1, usage: 2 } as const;
