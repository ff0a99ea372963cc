import { podNameFor, RUN_ID_LABEL } from '../check/pod-builder.ts';
import type { Clock } from '../core/clock.ts';
import { type IdSource, shortId } from '../core/ids.ts';
import type { Log } from '../core/log.ts';
import { WriteConflict } from '../kube/errors.ts';
import type { KubePort } from '../kube/port.ts';
import type { EventSink } from '../run/events.ts';
import { type ActiveRun, newKhState, OutcomeKind, readAcceptedReport } from '../state/khstate.ts';
import { executionError, type RunOutcome } from '../state/outcome.ts';
import { claimRun, recordOutcome } from '../state/record.ts';
import type { KhState, ValidCheck } from '../state/resources.ts';
import { announceOutcome } from './announce.ts';
import { decideClaim, leaseUntil } from './claim.ts';

export type Acquired =
  | { kind: 'owned'; run: ActiveRun; state: KhState; adopted: boolean }
  | { kind: 'busy'; run: ActiveRun };

export interface AcquireDeps {
  kube: KubePort;
  clock: Clock;
  ids: IdSource;
  log: Log;
  /** Announces each recorded outcome (Kubernetes Events); optional, and never fails the run. */
  events?: EventSink;
}

/**
 * Takes the check's run slot with compare-and-swap writes: claims a new run, adopts one whose runner let
 * go, or closes a stale one first. Bounded: after maxAttempts conflicts the caller gives up (exit 1).
 */
export async function acquireRun(
  deps: AcquireDeps,
  check: ValidCheck,
  opts: { runner: string; leaseMs: number; maxAttempts: number },
): Promise<Acquired> {
  const { kube, clock, log } = deps;
  for (let attempt = 1; attempt <= opts.maxAttempts; attempt++) {
    const state = await kube.readState(check.namespace, check.name);
    const nowMs = clock.nowMs();
    const decision = decideClaim(state, nowMs);
    try {
      switch (decision.kind) {
        case 'busy':
          return { kind: 'busy', run: decision.run };
        case 'close-stale': {
          await closeStaleRun(deps, check, state as KhState, decision.run, opts.runner);
          continue;
        }
        case 'adopt': {
          const run = {
            ...decision.run,
            runner: opts.runner,
            leaseUntilMs: leaseUntil(nowMs, opts.leaseMs, decision.run.deadlineMs),
          };
          const written = await kube.replaceState(claimRun(state as KhState, run));
          log.info('adopted run', { run: shortId(run.uuid), previousRunner: decision.run.runner });
          return { kind: 'owned', run, state: written, adopted: true };
        }
        case 'claim': {
          const uuid = deps.ids.runUuid();
          const deadlineMs = nowMs + check.timeoutMs;
          const run: ActiveRun = {
            uuid,
            startedAtMs: nowMs,
            deadlineMs,
            pod: podNameFor(check.name, nowMs),
            runner: opts.runner,
            leaseUntilMs: leaseUntil(nowMs, opts.leaseMs, deadlineMs),
          };
          const base = state ?? newKhState(check.name, check.namespace);
          const written = state
            ? await kube.replaceState(claimRun(base, run))
            : await kube.createState(claimRun(base, run));
          return { kind: 'owned', run, state: written, adopted: false };
        }
      }
    } catch (error) {
      if (!(error instanceof WriteConflict)) throw error;
      log.debug('claim conflicted; reading again', { attempt });
    }
  }
  throw new Error(
    `could not claim a run of ${check.namespace}/${check.name}: ${opts.maxAttempts} write conflicts in a row`,
  );
}

/**
 * Closes a run whose deadline passed with nobody to record it (its runner died): the accepted report if
 * there was one, else a timeout; its pods removed. Throws WriteConflict when someone else got there first.
 */
async function closeStaleRun(
  deps: AcquireDeps,
  check: ValidCheck,
  state: KhState,
  run: ActiveRun,
  runner: string,
) {
  const { kube, clock, log } = deps;
  const nowMs = clock.nowMs();
  const report = readAcceptedReport(state);
  const pods = (await kube.listCheckPods(check.namespace, check.name)).filter(
    (p) => p.metadata?.labels?.[RUN_ID_LABEL] === run.uuid,
  );
  for (const pod of pods) await kube.removePod(check.namespace, pod.metadata?.name ?? '');
  const outcome: RunOutcome =
    report?.uuid === run.uuid
      ? {
          kind: report.ok ? OutcomeKind.Succeeded : OutcomeKind.Failed,
          ok: report.ok,
          errors: report.errors,
          node: pods[0]?.spec?.nodeName ?? '',
          durationMs: Math.max(0, report.atMs - run.startedAtMs),
          reportedAtMs: report.atMs,
        }
      : {
          kind: OutcomeKind.TimedOut,
          ok: false,
          errors: [
            executionError(
              check.namespace,
              check.name,
              `timed out waiting for checker pod to report in (runner ${run.runner} stopped before the run's deadline and nobody recorded it)`,
            ),
          ],
          node: pods[0]?.spec?.nodeName ?? '',
          durationMs: Math.max(0, run.deadlineMs - run.startedAtMs),
        };
  await kube.replaceState(
    recordOutcome(state, run, outcome, { nowMs, runner, runIntervalMs: check.runIntervalMs }),
  );
  log.info('closed stale run', { run: shortId(run.uuid), outcome: outcome.kind });
  await announceOutcome(deps, check, { runUuid: run.uuid, outcome, atMs: nowMs, runner });
}
