import type { RunRef } from '../report/report-token.ts';
import type { ActiveRun } from '../state/khstate.ts';
import type { ValidCheck } from '../state/resources.ts';
import type { AcquireDeps } from './acquire.ts';
import type { AwaitOptions } from './await-outcome.ts';
import { announceRecorded, writeOutcome } from './finish.ts';
import { holdReports, type ReportInbox } from './report-inbox.ts';

/** A run's deliveries (awaitOutcome's option) and what is left to do once the wait ended. */
export interface RunDeliveries {
  deliveries: NonNullable<AwaitOptions['deliveries']>;
  /** Resolves once the Event of an outcome recorded from a delivery was emitted (at once when none). */
  announced(): Promise<void>;
  /** Stops taking reports for the run: call it however the iteration ends. */
  close(): void;
}

/**
 * Takes the run's place in the inbox (before its pod is created, so no report is missed) and says how a
 * delivered report is recorded: one write of the outcome, and of the report as the endpoint would have
 * stored it, on the khstate the wait holds, fenced as every record is (finish.ts). The endpoint answers once that write landed; the Event follows, and the iteration
 * awaits it before it returns.
 */
export function runDeliveries(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  inbox: ReportInbox,
  opts: { runRef: RunRef; runner: string; maxAttempts: number },
): RunDeliveries {
  const held = holdReports(inbox, opts.runRef);
  let announcing: Promise<void> = Promise.resolve();
  return {
    deliveries: {
      open: (receiver) => held.attach(receiver),
      record: async (outcome, state) => {
        const report = {
          uuid: run.uuid,
          atMs: outcome.reportedAtMs ?? deps.clock.nowMs(),
          ok: outcome.ok,
          errors: outcome.errors,
          pod: run.pod,
        };
        const written = await writeOutcome(deps, check, run, outcome, {
          runner: opts.runner,
          maxAttempts: opts.maxAttempts,
          held: state,
          report,
        });
        if (written.kind === 'recorded')
          announcing = announceRecorded(deps, check, run, written, opts.runner);
        return written;
      },
    },
    announced: () => announcing,
    close: () => held.close(),
  };
}
