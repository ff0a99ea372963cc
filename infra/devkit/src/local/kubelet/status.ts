import type {
  V1ContainerState,
  V1ContainerStatus,
  V1Pod,
  V1PodCondition,
  V1PodStatus,
} from '@kubernetes/client-node';

export type Waiting = { kind: 'waiting'; reason: string; message?: string };
export type Running = { kind: 'running'; startedAt: string; pid: number };
export type Terminated = {
  kind: 'terminated';
  exitCode: number;
  /** The signal that ended the process, when one did (the exit code is then 128 + its number). */
  signal?: number;
  reason: string;
  message?: string;
  startedAt: string;
  finishedAt: string;
  pid?: number;
  /** Millisecond wall-clock times of the process's start and exit, for benchmarks (the API keeps seconds). */
  processStartedAtMs?: number;
  processExitedAtMs?: number;
};
export type ContainerState = Waiting | Running | Terminated;

/** The kubelet's own record of one container, the source of truth for its status. */
export interface ContainerRecord {
  name: string;
  image: string;
  imageID: string;
  state: ContainerState;
  lastTerminated?: Terminated;
  restartCount: number;
}

/** The kubelet's record of one pod; `buildPodStatus` maps it, with the pod object, to the API status. */
export interface PodRuntime {
  hostIp: string;
  podIp?: string;
  startTime?: string;
  /** The network namespace exists (condition PodReadyToStartContainers). */
  sandboxReady: boolean;
  initContainers: ContainerRecord[];
  containers: ContainerRecord[];
  /** No container will run again: everything finished for good, or the pod was deleted and killed. */
  terminal: boolean;
}

/** RFC 3339 at second precision, the way the API server writes metav1.Time. */
export function apiTime(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

export function initialRecord(name: string, image: string, reason: string): ContainerRecord {
  return { name, image, imageID: '', state: { kind: 'waiting', reason }, restartCount: 0 };
}

const completed = (r: ContainerRecord) => r.state.kind === 'terminated' && r.state.exitCode === 0;

/** The kubelet's getPhase, for containers without sidecars. */
export function podPhase(restartPolicy: string | undefined, rt: PodRuntime): string {
  const policy = restartPolicy ?? 'Always';
  const initFailed = rt.initContainers.some(
    (r) => r.state.kind === 'terminated' && r.state.exitCode !== 0 && (policy === 'Never' || rt.terminal),
  );
  if (initFailed) return 'Failed';
  const initPending = rt.initContainers.some((r) => !completed(r));
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const r of rt.containers) {
    if (r.state.kind === 'running') running++;
    else if (r.state.kind === 'terminated') {
      stopped++;
      if (r.state.exitCode === 0) succeeded++;
    } else if (r.lastTerminated) stopped++;
    else waiting++;
  }
  if (initPending && rt.terminal) return 'Failed';
  if (initPending || waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (rt.terminal) return stopped === succeeded ? 'Succeeded' : 'Failed';
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    return policy === 'Never' ? 'Failed' : 'Running';
  }
  return 'Pending';
}

function stateOf(s: ContainerState): V1ContainerState {
  switch (s.kind) {
    case 'waiting':
      return { waiting: { reason: s.reason, ...(s.message ? { message: s.message } : {}) } };
    case 'running':
      return { running: { startedAt: s.startedAt as unknown as Date } };
    case 'terminated':
      return { terminated: terminatedOf(s) };
  }
}

function terminatedOf(s: Terminated): NonNullable<V1ContainerState['terminated']> {
  return {
    exitCode: s.exitCode,
    ...(s.signal ? { signal: s.signal } : {}),
    reason: s.reason,
    ...(s.message ? { message: s.message } : {}),
    startedAt: s.startedAt as unknown as Date,
    finishedAt: s.finishedAt as unknown as Date,
    containerID: s.pid ? `proc://${s.pid}` : undefined,
  };
}

export function containerStatus(r: ContainerRecord, isInit: boolean): V1ContainerStatus {
  const pid = r.state.kind === 'waiting' ? r.lastTerminated?.pid : r.state.pid;
  const running = r.state.kind === 'running';
  return {
    name: r.name,
    image: r.image,
    imageID: r.imageID,
    ...(pid ? { containerID: `proc://${pid}` } : {}),
    ready: isInit ? completed(r) : running,
    started: running,
    restartCount: r.restartCount,
    state: stateOf(r.state),
    lastState: r.lastTerminated ? { terminated: terminatedOf(r.lastTerminated) } : {},
  };
}

const OWN_CONDITIONS = new Set(['PodReadyToStartContainers', 'Initialized', 'ContainersReady', 'Ready']);

type Condition = [type: string, ok: boolean, reason?: string, message?: string];

/** The pod conditions the kubelet owns, computed as the kubelet's status manager does. */
export function kubeletConditions(pod: V1Pod, rt: PodRuntime, phase: string): Condition[] {
  const succeeded = phase === 'Succeeded';
  const notInitialized = rt.initContainers.filter((r) => !completed(r)).map((r) => r.name);
  const unready = rt.containers.filter((r) => r.state.kind !== 'running').map((r) => r.name);
  const gates = (pod.spec?.readinessGates ?? []).map((g) => g.conditionType);
  const conditionTrue = (type: string) =>
    pod.status?.conditions?.some((c) => c.type === type && c.status === 'True');
  const missingGates = gates.filter((g) => !conditionTrue(g));
  const containersReady: Condition = succeeded
    ? ['ContainersReady', false, 'PodCompleted']
    : unready.length > 0
      ? [
          'ContainersReady',
          false,
          'ContainersNotReady',
          `containers with unready status: [${unready.join(' ')}]`,
        ]
      : ['ContainersReady', true];
  const ready: Condition = !containersReady[1]
    ? ['Ready', false, containersReady[2], containersReady[3]]
    : missingGates.length > 0
      ? [
          'Ready',
          false,
          'ReadinessGatesNotReady',
          `corresponding condition of pod readiness gate "${missingGates[0]}" does not exist.`,
        ]
      : ['Ready', true];
  const initialized: Condition = succeeded
    ? ['Initialized', true, 'PodCompleted']
    : notInitialized.length > 0
      ? [
          'Initialized',
          false,
          'ContainersNotInitialized',
          `containers with incomplete status: [${notInitialized.join(' ')}]`,
        ]
      : ['Initialized', true];
  return [['PodReadyToStartContainers', rt.sandboxReady], initialized, ready, containersReady];
}

/**
 * The whole pod status the kubelet writes: its own fields and conditions from the runtime record, and
 * everything others own (PodScheduled, qosClass, nominatedNodeName, foreign conditions) kept from the
 * pod as read. A condition keeps its lastTransitionTime while its status does not change.
 */
export function buildPodStatus(pod: V1Pod, rt: PodRuntime, now: string): V1PodStatus {
  const previous = pod.status ?? {};
  const phase = podPhase(pod.spec?.restartPolicy, rt);
  const previousOf = (type: string) => previous.conditions?.find((c) => c.type === type);
  const own: V1PodCondition[] = kubeletConditions(pod, rt, phase).map(([type, ok, reason, message]) => {
    const status = ok ? 'True' : 'False';
    const before = previousOf(type);
    return {
      type,
      status,
      lastTransitionTime: (before?.status === status ? before.lastTransitionTime : now) as Date,
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
    };
  });
  const foreign = (previous.conditions ?? []).filter((c) => !OWN_CONDITIONS.has(c.type));
  const status: V1PodStatus = {
    ...previous,
    phase,
    conditions: [...foreign, ...own],
    hostIP: rt.hostIp,
    hostIPs: [{ ip: rt.hostIp }],
    ...(rt.podIp ? { podIP: rt.podIp, podIPs: [{ ip: rt.podIp }] } : {}),
    ...(rt.startTime ? { startTime: rt.startTime as unknown as Date } : {}),
    containerStatuses: rt.containers.map((r) => containerStatus(r, false)),
  };
  if (rt.initContainers.length > 0)
    status.initContainerStatuses = rt.initContainers.map((r) => containerStatus(r, true));
  return status;
}
