/** How a run ended, as recorded in the khstate's last outcome, history and totals. */
export const OutcomeKind = {
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  TimedOut: 'TimedOut',
  ExecutionError: 'ExecutionError',
  Skipped: 'Skipped',
} as const;
export type OutcomeKind = (typeof OutcomeKind)[keyof typeof OutcomeKind];
