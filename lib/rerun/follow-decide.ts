import type { CoreV1Event, V1Job, V1Pod } from '@kubernetes/client-node';
import { readActiveRun, readLastOutcome } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';

/** What following a runner Job has seen so far: the Job, its pods, the run's state, warnings about them. */
export interface FollowView {
  /** The runner Job as last seen; null once it was deleted. */
  job: V1Job | null;
  /** The Job's pods (a pod lost to a disruption is replaced; the newest runs the check). */
  pods: readonly V1Pod[];
  /** The target's khstate, or a HealthCheck's khstate view; null while it has none. */
  state: KhState | null;
  /** Warning Events on the Job and its pods (empty when the caller may not read Events). */
  events: readonly CoreV1Event[];
}

/** What was true before the Job was created. */
export interface FollowStart {
  /** The uuid of the outcome recorded last before the Job existed: another uuid is a newer run's. */
  lastOutcomeUuid: string | undefined;
  /** The runner's container in the Job's pods, whose exit code is the run's. */
  runnerContainer: string;
}

/** One line of progress, printed once: `key` says whether it was printed already. */
export interface Milestone {
  key: string;
  line: string;
}

const createdMs = (p: V1Pod) => Date.parse(String(p.metadata?.creationTimestamp ?? '')) || 0;

/** The Job's pods, oldest first. */
export function podsInOrder(pods: readonly V1Pod[]): V1Pod[] {
  return [...pods].sort((a, b) => createdMs(a) - createdMs(b));
}

const nameOf = (p: V1Pod) => p.metadata?.name ?? '?';

/** Container states that only say a container is being started, not why it is stuck. */
const STARTING = new Set(['ContainerCreating', 'PodInitializing']);

function podMilestones(pod: V1Pod, runner: string): Milestone[] {
  const name = nameOf(pod);
  const out: Milestone[] = [];
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'True')
    out.push({ key: `${name}/scheduled`, line: `pod ${name} scheduled on ${pod.spec?.nodeName ?? '?'}` });
  else if (scheduled?.reason === 'Unschedulable')
    out.push({ key: `${name}/unschedulable`, line: `pod ${name} unschedulable: ${scheduled.message ?? ''}` });
  for (const c of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
    const waiting = c.state?.waiting;
    if (waiting?.reason && !STARTING.has(waiting.reason))
      out.push({
        key: `${name}/${c.name}/waiting/${waiting.reason}`,
        line: `pod ${name}: container ${c.name} waiting: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`,
      });
  }
  if (pod.status?.phase === 'Running') out.push({ key: `${name}/running`, line: `pod ${name} running` });
  const done = pod.status?.containerStatuses?.find((c) => c.name === runner)?.state?.terminated;
  if (done)
    out.push({
      key: `${name}/exited`,
      line: `pod ${name}: runner exited ${done.exitCode}${done.reason ? ` (${done.reason})` : ''}`,
    });
  return out;
}

/** Whether the state's recorded result was written by one of the Job's pods (AuthoritativePod is the runner's). */
function recordedBy(state: KhState | null, pods: readonly V1Pod[]): string | undefined {
  const by = state?.spec?.AuthoritativePod;
  return by && pods.some((p) => nameOf(p) === by) ? by : undefined;
}

/**
 * The progress lines of what the view shows, in the order things happen: per pod scheduled, stuck,
 * running, exited; the run claimed by the Job's runner; its outcome recorded (or another runner's);
 * warnings. The run's UUID is never printed: while the run is active it is a report credential. Pure.
 */
export function milestones(view: FollowView, start: FollowStart): Milestone[] {
  const out: Milestone[] = [];
  for (const pod of podsInOrder(view.pods)) out.push(...podMilestones(pod, start.runnerContainer));
  const active = readActiveRun(view.state);
  const holder = active && view.pods.find((p) => nameOf(p) === active.runner);
  if (active && holder)
    out.push({ key: `claimed/${active.startedAtMs}`, line: `run claimed by ${nameOf(holder)}` });
  const last = readLastOutcome(view.state);
  if (last && last.uuid !== start.lastOutcomeUuid) {
    const ours = recordedBy(view.state, view.pods);
    out.push({
      key: `recorded/${last.finishedAtMs}`,
      line: ours
        ? `outcome recorded by ${ours}: ${last.kind} in ${(last.durationMs / 1000).toFixed(2)}s`
        : `an outcome was recorded by ${view.state?.spec?.AuthoritativePod || 'another runner'}: ${last.kind}`,
    });
  }
  for (const e of view.events) {
    if (e.type !== 'Warning') continue;
    const what = `${e.involvedObject?.kind ?? ''} ${e.involvedObject?.name ?? ''}`.trim();
    out.push({
      key: `event/${e.metadata?.uid ?? ''}/${e.count ?? 1}`,
      line: `warning: ${e.reason ?? ''} on ${what}: ${e.message ?? ''}`,
    });
  }
  return out;
}

/** How following ends: the Job finished (either way), or it was deleted before it did. */
export type FollowEnd =
  | {
      kind: 'finished';
      succeeded: boolean;
      /** The Job's Failed condition: reason and message (DeadlineExceeded, PodFailurePolicy, ...). */
      reason?: string;
      /** The newest pod: the one whose runner ran (or last tried) the check. */
      pod?: string;
      /** Its runner container's exit code, when it exited. */
      exitCode?: number;
    }
  | { kind: 'job-deleted' };

/** Whether following is over, from the view alone. Pure. */
export function followEnd(view: FollowView, start: FollowStart): FollowEnd | undefined {
  if (view.job === null) return { kind: 'job-deleted' };
  const conditions = view.job.status?.conditions ?? [];
  const complete = conditions.find((c) => c.type === 'Complete' && c.status === 'True');
  const failed = conditions.find((c) => c.type === 'Failed' && c.status === 'True');
  if (!complete && !failed) return undefined;
  const pod = podsInOrder(view.pods).at(-1);
  const exitCode = pod?.status?.containerStatuses?.find((c) => c.name === start.runnerContainer)?.state
    ?.terminated?.exitCode;
  return {
    kind: 'finished',
    succeeded: Boolean(complete),
    ...(failed ? { reason: [failed.reason, failed.message].filter(Boolean).join(': ') } : {}),
    ...(pod ? { pod: nameOf(pod) } : {}),
    ...(exitCode === undefined ? {} : { exitCode }),
  };
}
