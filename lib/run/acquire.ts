import type { V1Pod } from '@kubernetes/client-node';
import { podNameFor } from '../check/pod-builder.ts';
import { isRunPod } from '../check/run-label.ts';
import { shortId } from '../core/ids.ts';
import { done, updateKhStateWithRetry, write } from '../kube/cas.ts';
import { type ActiveRun, newKhState, readAcceptedReport } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { reportedOutcome, timedOutOutcome } from '../state/outcomes.ts';
import { claimRun, type RecordContext, recordOutcome } from '../state/record.ts';
import type { KhState, ValidCheck } from '../state/resources.ts';
import type { AcquireDeps } from './acquire-deps.ts';
import { announceOutcome } from './announce.ts';
import { decideClaim, leaseUntil } from './claim.ts';
import { removePodsByUid } from './remove-pod.ts';

export type Acquired =
  | { kind: 'owned'; run: ActiveRun; state: KhState; adopted: boolean }
  | { kind: 'busy'; run: ActiveRun }
  | { kind: 'refused'; reason: string };

export interface ClosedRun {
  run: ActiveRun;
  outcome: RunOutcome;
  atMs: number;
  /** The closed run's pods as listed before the write, removed (by uid) once the write landed. */
  pods: V1Pod[];
}

/**
 * Takes the check's run slot in one compare-and-swap write: claims a new run, adopts one whose runner let
 * go, or closes a stale one and claims in the same write. The run is then held by opts.holder (this
 * invocation), the fencing token every later write checks. A closed stale run's pods are removed only
 * after that write landed. Gives up with RetriesExhausted (exit 1) after maxAttempts conflicts.
 */
export async function acquireRun(
  deps: AcquireDeps,
  check: ValidCheck,
  opts: {
    runner: string;
    holder: string;
    leaseMs: number;
    maxAttempts: number;
    /** Judges the khstate the claim reads anyway (no extra request): a reason when this run must not start. */
    refuse?: (state: KhState | null) => string | undefined;
  },
): Promise<Acquired> {
  let closed: ClosedRun | undefined;
  const acquired = await updateKhStateWithRetry<Acquired>(deps.kube, check, {
    writer: 'claim',
    intent: 'claim',
    maxAttempts: opts.maxAttempts,
    log: deps.log,
    decide: async (state) => {
      closed = undefined;
      const refusal = opts.refuse?.(state);
      if (refusal !== undefined) return done({ kind: 'refused', reason: refusal });
      const nowMs = deps.clock.nowMs();
      const decision = decideClaim(state, nowMs);
      if (decision.kind === 'busy') return done({ kind: 'busy', run: decision.run });
      if (decision.kind === 'adopt') {
        const run: ActiveRun = {
          ...decision.run,
          runner: opts.runner,
          holder: opts.holder,
          leaseUntilMs: leaseUntil(nowMs, opts.leaseMs, decision.run.deadlineMs),
        };
        return write(claimRun(state as KhState, run), (written) => owned(run, written, true));
      }
      let base = state ?? newKhState(check.name, check.namespace);
      if (decision.kind === 'close-stale') {
        const ctx = {
          nowMs,
          runner: opts.runner,
          runIntervalMs: check.runIntervalMs,
          timeoutMs: check.timeoutMs,
        };
        ({ closed, next: base } = await closeStale(deps, check, base, decision.run, ctx));
      }
      const run = newRun(deps, check, nowMs, opts);
      return write(claimRun(base, run), (written) => owned(run, written, false));
    },
  });
  if (closed)
    await settleClosedRun(deps, check, closed, { runner: opts.runner, message: 'closed stale run' });
  if (acquired.kind === 'owned' && acquired.adopted)
    deps.log.info('adopted run', { run: shortId(acquired.run.uuid) });
  return acquired;
}

/**
 * A stale run closed in the khstate the caller writes next: its outcome (closeStaleRun) recorded on base
 * with ctx. Write `next` in one compare-and-swap write; once it landed, call settleClosedRun.
 */
export async function closeStale(
  deps: AcquireDeps,
  check: ValidCheck,
  base: KhState,
  run: ActiveRun,
  ctx: RecordContext,
): Promise<{ closed: ClosedRun; next: KhState }> {
  const closed = await closeStaleRun(deps, check, base, run, ctx.nowMs);
  const recorded = recordOutcome(base, closed.run, closed.outcome, ctx);
  // Its notification is queued in the same write, for nobody in particular: the tick's sweep or the next
  // outcome write of this check (which leases what is due) delivers it.
  const next = deps.notify
    ? await deps.notify.decide(recorded, {
        check: check.source,
        runIntervalMs: check.runIntervalMs,
        outcome: closed.outcome,
        runUuid: closed.run.uuid,
        atMs: ctx.nowMs,
      })
    : recorded;
  return { closed, next };
}

/**
 * After the write that closed a stale run landed (never for a write that lost its race): its pods are
 * removed, each by uid, one log line says so (message), and the outcome is announced.
 */
export async function settleClosedRun(
  deps: AcquireDeps,
  check: ValidCheck,
  closed: ClosedRun,
  opts: { runner: string; message: string },
): Promise<void> {
  await removePodsByUid(deps, check.namespace, closed.pods);
  deps.log.info(opts.message, { run: shortId(closed.run.uuid), outcome: closed.outcome.kind });
  await announceOutcome(deps, check, {
    runUuid: closed.run.uuid,
    outcome: closed.outcome,
    atMs: closed.atMs,
    runner: opts.runner,
  });
}

const owned = (run: ActiveRun, state: KhState, adopted: boolean): Acquired => ({
  kind: 'owned',
  run,
  state,
  adopted,
});

function newRun(
  deps: AcquireDeps,
  check: ValidCheck,
  nowMs: number,
  opts: { runner: string; holder: string; leaseMs: number },
): ActiveRun {
  const deadlineMs = nowMs + check.timeoutMs;
  return {
    uuid: deps.ids.runUuid(),
    startedAtMs: nowMs,
    deadlineMs,
    pod: podNameFor(check.name, nowMs),
    runner: opts.runner,
    holder: opts.holder,
    leaseUntilMs: leaseUntil(nowMs, opts.leaseMs, deadlineMs),
  };
}

/**
 * The outcome of a run whose deadline passed with nobody to record it (its runner died): the accepted
 * report if there was one, else a timeout. Its pods are listed here and removed once the closing write
 * landed (never for a write that lost its race).
 */
async function closeStaleRun(
  deps: AcquireDeps,
  check: ValidCheck,
  state: KhState,
  run: ActiveRun,
  nowMs: number,
): Promise<ClosedRun> {
  const report = readAcceptedReport(state);
  const pods = (await deps.kube.listCheckPods(check.namespace, check.name)).filter((p) =>
    isRunPod(p, run.uuid),
  );
  const node = pods[0]?.spec?.nodeName ?? '';
  const outcome =
    report?.uuid === run.uuid
      ? reportedOutcome(report, run, node)
      : timedOutOutcome(
          check,
          `runner ${run.runner} stopped before the run's deadline and nobody recorded it`,
          { node, durationMs: Math.max(0, run.deadlineMs - run.startedAtMs) },
        );
  return { run, outcome, atMs: nowMs, pods };
}
