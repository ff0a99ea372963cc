import { abortableDelay } from '../core/abort.ts';
import { API_OUTAGE_BACKOFF, Backoff } from '../core/backoff.ts';
import { isTransientApiError } from '../kube/errors.ts';
import type { RunRef } from '../report/report-token.ts';
import {
  type AcceptedReport,
  type ActiveRun,
  readAcceptedReport,
  readActiveRun,
  readLastOutcome,
} from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import type { KhState, ValidCheck } from '../state/resources.ts';
import type { AcquireDeps } from './acquire-deps.ts';
import type { AwaitOptions } from './await-outcome.ts';
import { announceRecorded, notifyRecorded, type WrittenOutcome, writeOutcome } from './finish.ts';
import { holdReports, type ReportInbox } from './report-inbox.ts';

/** A delivered report waits at least this long for an unreachable API server (as the endpoint's store path). */
const MIN_HOLD_MS = 15_000;

/** A run's deliveries (awaitOutcome's option) and what is left to do once the wait ended. */
export interface RunDeliveries {
  deliveries: NonNullable<AwaitOptions['deliveries']>;
  /**
   * Resolves once the Event of an outcome recorded from a delivery was emitted and the notifications its
   * write queued for this invocation were delivered (at once when none).
   */
  announced(): Promise<void>;
  /** Stops taking reports for the run: call it however the iteration ends. */
  close(): void;
}

/**
 * Takes the run's place in the inbox (before its pod is created, so no report is missed) and says how a
 * delivered report is recorded: one write of the outcome, and of the report as the endpoint would have
 * stored it, on the khstate the wait holds, fenced as every record is (finish.ts). The endpoint answers
 * once that write landed; the Event follows, and the iteration awaits it before it returns.
 */
export function runDeliveries(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  inbox: ReportInbox,
  opts: {
    runRef: RunRef;
    runner: string;
    maxAttempts: number;
    signal: AbortSignal;
    onPhase?: (phase: string) => void;
  },
): RunDeliveries {
  const held = holdReports(inbox, opts.runRef);
  let announcing: Promise<void> = Promise.resolve();
  return {
    deliveries: {
      open: (receiver) => held.attach(receiver),
      record: async (outcome, state) => {
        const written = await recordDelivered(deps, check, run, { ...opts, outcome, held: state });
        // The Event and the notifications, side by side, while the run waits for its pod to exit.
        if (written.kind === 'recorded')
          announcing = Promise.all([
            announceRecorded(deps, check, run, written, opts.runner),
            notifyRecorded(deps, check, run, written, opts),
          ]).then(() => undefined);
        return written;
      },
    },
    announced: () => announcing,
    close: () => held.close(),
  };
}

/**
 * The write, held while the API server cannot be reached (a checker's report is never retried by the
 * common clients): until the run's deadline, at least MIN_HOLD_MS, or until the invocation is cancelled.
 * A write that failed that way may have landed all the same: the next try looks before it writes.
 */
async function recordDelivered(
  deps: AcquireDeps,
  check: ValidCheck,
  run: ActiveRun,
  opts: { outcome: RunOutcome; held: KhState; runner: string; maxAttempts: number; signal: AbortSignal },
): Promise<WrittenOutcome> {
  const { outcome } = opts;
  const report: AcceptedReport = {
    uuid: run.uuid,
    atMs: outcome.reportedAtMs ?? deps.clock.nowMs(),
    ok: outcome.ok,
    errors: outcome.errors,
    pod: run.pod,
  };
  const write = { runner: opts.runner, maxAttempts: opts.maxAttempts, report };
  let held: KhState | undefined = opts.held;
  const holdUntilMs = Math.max(run.deadlineMs, deps.clock.nowMs() + MIN_HOLD_MS);
  const backoff = new Backoff(API_OUTAGE_BACKOFF);
  for (;;) {
    try {
      if (!held) {
        const current = await deps.kube.readState(check.namespace, check.name);
        if (landed(current, report))
          return {
            kind: 'recorded',
            outcome,
            atMs: deps.clock.nowMs(),
            ...(current ? { state: current } : {}),
          };
        held = current ?? undefined;
      }
      return await writeOutcome(deps, check, run, outcome, { ...write, held });
    } catch (error) {
      if (!isTransientApiError(error) || deps.clock.nowMs() >= holdUntilMs) throw error;
      const waitMs = backoff.next();
      deps.log.warn('API server unavailable; the delivered report waits for it', { retryInMs: waitMs });
      held = undefined;
      await abortableDelay(waitMs, opts.signal).catch(() => {
        throw error;
      });
    }
  }
}

/** Whether this very report was recorded as the run's outcome (a write whose answer was lost). */
function landed(state: KhState | null, report: AcceptedReport): boolean {
  const stored = readAcceptedReport(state);
  return (
    readActiveRun(state)?.uuid !== report.uuid &&
    readLastOutcome(state)?.uuid === report.uuid &&
    stored?.uuid === report.uuid &&
    stored.atMs === report.atMs
  );
}
