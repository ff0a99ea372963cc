import type { DueDecision } from './due.ts';

/** What a tick did about one check. */
export type TickEntry = {
  check: string;
  decision: DueDecision;
  result: 'dispatched' | 'not-due' | 'lost' | 'failed' | 'refused';
  ref?: string;
  error?: string;
};
