import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { type ActiveRun, readAcceptedReport } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import {
  executionErrorOutcome,
  exitedWithoutReportOutcome,
  type OutcomeAt,
  reportedOutcome,
  skippedOutcome,
  timedOutOutcome,
} from '../state/outcomes.ts';
import type { KhState } from '../state/resources.ts';

export interface RunTimings {
  /** After a report, how long the pod may keep running (a sidecar that never stops) before it is removed. */
  exitGraceMs: number;
  /**
   * After the pod was seen to exit without a report, how long a report the checker sent before it exited may
   * still take to reach the run (LATE_REPORT_GRACE_MS).
   */
  lateReportGraceMs: number;
}

/**
 * The late-report grace: 500 ms from the moment the runner sees the checker pod terminal, then "exited
 * without reporting". It only decides which outcome a report still in flight at the exit gets; that nothing
 * acknowledged is lost never depends on it:
 * - A client that waits for its answer (v2's Go checkclient, the npm client) exits after the report was
 *   recorded: the runner's own endpoint answers 200 only once the outcome is written (deliveries.ts), an
 *   external server (`khrun serve`, the report Lambda) once the report is stored in the khstate.
 * - A report stored in the khstate after the grace but before the outcome write still wins: that write is a
 *   compare-and-swap on the khstate the runner last saw, so it conflicts, reads again and records the report
 *   (reconcileWithReport, finish.ts). One stored later finds the run closed and is refused (400, "late"):
 *   never answered 200 and lost, and never a second outcome.
 * - What the grace covers is a report written out just before the exit and not yet taken. At the runner's
 *   own endpoint its bytes arrived before the exit could be seen at all (the exit travels kubelet → API
 *   server → etcd → watch, the report one hop), so what is left is in-process (body, token, parse: no API
 *   request), milliseconds. To an external server it is one store (a khstate GET and PUT) and a watch event,
 *   against the exit's one pod status write and watch event: tens of milliseconds on a loaded cluster.
 * 500 ms is ten times that, and keeps a silent exit recorded within 1.5 s of the process's end where the
 * kubelet publishes the exit at once (the local cluster's; a real kubelet's PLEG relist adds up to 1 s).
 * test/integration/faults/exit-grace.test.ts measures both sides, test/unit/late-report-grace.test.ts
 * pins the boundary.
 */
export const LATE_REPORT_GRACE_MS = 500;

export const DEFAULT_TIMINGS: RunTimings = { exitGraceMs: 30_000, lateReportGraceMs: LATE_REPORT_GRACE_MS };

/** What the driver observed of the run so far. */
export interface RunObservation {
  run: ActiveRun;
  checkName: string;
  namespace: string;
  state: KhState | null;
  /** The run's checker pod (by run-id label), if it exists now. */
  pod: V1Pod | undefined;
  /** Whether the pod was ever observed; a pod that was seen and is now gone was deleted. */
  podSeen: boolean;
  /** When the driver first saw the pod terminal, if it has. */
  podTerminalSinceMs: number | undefined;
  nowMs: number;
}

export type Assessment =
  | { kind: 'wait'; untilMs: number }
  | { kind: 'finish'; outcome: RunOutcome; removePods: boolean };

/** Waiting reasons that mean the container will not start without someone changing something. */
export const START_FAILURE_REASONS: ReadonlySet<string> = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

function allStatuses(pod: V1Pod): V1ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
}

export function isPodTerminal(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return true;
  const main = pod.status?.containerStatuses ?? [];
  return main.length > 0 && main.every((s) => s.state?.terminated);
}

function startFailure(pod: V1Pod): string | undefined {
  for (const s of allStatuses(pod)) {
    const waiting = s.state?.waiting;
    if (waiting?.reason && START_FAILURE_REASONS.has(waiting.reason)) {
      return `checker pod ${pod.metadata?.name} failed to start: container ${s.name}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
    }
  }
  return undefined;
}

function exitDescription(pod: V1Pod): string {
  const terminated = allStatuses(pod).filter((s) => s.state?.terminated);
  const failed = terminated.find((s) => s.state?.terminated?.exitCode !== 0) ?? terminated[0];
  const t = failed?.state?.terminated;
  if (!failed || !t)
    return `checker pod ${pod.metadata?.name} ended in phase ${pod.status?.phase ?? 'unknown'} without reporting`;
  const message = t.message?.trim() ? `: ${t.message.trim()}` : '';
  return `checker pod ${pod.metadata?.name} exited without reporting: container ${failed.name} exited with code ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}${message}`;
}

/** What was last seen of the pod, so a timeout says what to fix. */
export function describePodProgress(pod: V1Pod | undefined, podSeen: boolean): string {
  if (!pod) return podSeen ? 'the checker pod was deleted' : 'the checker pod was never seen';
  const name = pod.metadata?.name;
  const phase = pod.status?.phase ?? 'Pending';
  const blocking = pod.status?.conditions?.find((c) => c.status === 'False' && (c.reason || c.message));
  const waiting = allStatuses(pod).find((s) => s.state?.waiting?.reason)?.state?.waiting;
  const parts = [`pod ${name} was ${phase}`];
  if (phase === 'Pending' && blocking) {
    parts.push([blocking.type, blocking.reason, blocking.message].filter(Boolean).join(': '));
  }
  if (waiting?.reason)
    parts.push(`waiting: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`);
  return parts.join('; ');
}

/**
 * Decides, from one consistent observation, whether the run is over and how. Pure: the driver calls it
 * on every watch event and at the returned time, whichever comes first. In order: a report decides; a pod
 * deleted by someone else ends the run without a result; a pod that cannot start, or ended without a
 * report, is an execution error; else the deadline.
 */
export function assessRun(o: RunObservation, timings: RunTimings = DEFAULT_TIMINGS): Assessment {
  return assessReport(o, timings) ?? assessDeletion(o) ?? assessPodFailure(o, timings) ?? assessDeadline(o);
}

const nodeOf = (o: RunObservation) => o.pod?.spec?.nodeName ?? '';
const elapsedMs = (o: RunObservation) => Math.max(0, o.nowMs - o.run.startedAtMs);
const atNow = (o: RunObservation): OutcomeAt => ({ node: nodeOf(o), durationMs: elapsedMs(o) });
const checkOf = (o: RunObservation) => ({ namespace: o.namespace, name: o.checkName });
const finish = (outcome: RunOutcome, removePods: boolean): Assessment => ({
  kind: 'finish',
  outcome,
  removePods,
});

/** The run's accepted report decides; a pod still running after it gets exitGraceMs to exit by itself. */
function assessReport(o: RunObservation, timings: RunTimings): Assessment | undefined {
  const { run, pod, nowMs } = o;
  const report = readAcceptedReport(o.state);
  if (!report || report.uuid !== run.uuid) return undefined;
  const outcome = reportedOutcome(report, run, nodeOf(o));
  if (!pod || isPodTerminal(pod)) return { kind: 'finish', outcome, removePods: false };
  const graceEndMs = report.atMs + timings.exitGraceMs;
  if (nowMs >= graceEndMs) return { kind: 'finish', outcome, removePods: true };
  return { kind: 'wait', untilMs: graceEndMs };
}

/**
 * Someone else is deleting the pod (a drain, a person, the khcheck's garbage collection): its exit is the
 * deletion's doing, not the check's. A report may still land while it terminates; once it has stopped (or
 * is gone) without one, nothing is recorded.
 */
function assessDeletion(o: RunObservation): Assessment | undefined {
  const { pod, run, nowMs } = o;
  const deletedByOthers =
    (!pod && o.podSeen) || (pod?.metadata?.deletionTimestamp !== undefined && isPodTerminal(pod));
  if (pod?.metadata?.deletionTimestamp && !deletedByOthers && nowMs < run.deadlineMs) {
    return { kind: 'wait', untilMs: run.deadlineMs };
  }
  if (!deletedByOthers) return undefined;
  return finish(
    skippedOutcome(
      'the checker pod was deleted before it reported; no result recorded, the last result stands',
      atNow(o),
    ),
    false,
  );
}

/**
 * A pod that cannot start fails at once; one that ended without a report, lateReportGraceMs after it was first
 * seen terminal (never past the deadline).
 */
function assessPodFailure(o: RunObservation, timings: RunTimings): Assessment | undefined {
  const { pod, run, nowMs } = o;
  if (!pod) return undefined;
  const failure = startFailure(pod);
  if (failure) return finish(executionErrorOutcome(checkOf(o), failure, atNow(o)), true);
  if (!isPodTerminal(pod)) return undefined;
  const sinceMs = o.podTerminalSinceMs ?? nowMs;
  const graceEndMs = Math.min(sinceMs + timings.lateReportGraceMs, run.deadlineMs);
  if (nowMs >= graceEndMs)
    return finish(exitedWithoutReportOutcome(checkOf(o), exitDescription(pod), atNow(o)), false);
  return { kind: 'wait', untilMs: graceEndMs };
}

function assessDeadline(o: RunObservation): Assessment {
  if (o.nowMs < o.run.deadlineMs) return { kind: 'wait', untilMs: o.run.deadlineMs };
  const progress = describePodProgress(o.pod, o.podSeen);
  return finish(timedOutOutcome(checkOf(o), progress, atNow(o)), true);
}
