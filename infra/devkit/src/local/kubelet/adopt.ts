import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { shouldRestart } from './restart.ts';
import { apiTime, type ContainerRecord, initialRecord, type PodRuntime, type Terminated } from './status.ts';

const timeString = (t: Date | string | undefined, fallback: string) =>
  t === undefined ? fallback : typeof t === 'string' ? t : apiTime(t);

/**
 * The records of a pod this kubelet sees for the first time. A pod whose status says its containers
 * already ran was run by an earlier kubelet whose processes are gone: restart counts are kept, finished
 * runs stay finished, and a run that was in progress is lost the way the kubelet reports a container it
 * cannot find (terminated, ContainerStatusUnknown, exit 137); whatever the restart policy would run again
 * runs again. A new pod simply gets waiting records.
 */
export function adoptRecords(pod: V1Pod): Pick<PodRuntime, 'initContainers' | 'containers' | 'startTime'> {
  const status = pod.status ?? {};
  const previous = new Map(
    [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])].map((s) => [s.name, s]),
  );
  const now = apiTime(new Date());
  const hasInit = (pod.spec?.initContainers ?? []).length > 0;
  const record = (c: V1Container, isInit: boolean): ContainerRecord => {
    const r = initialRecord(
      c.name,
      c.image ?? '',
      !isInit && hasInit ? 'PodInitializing' : 'ContainerCreating',
    );
    const s = previous.get(c.name);
    if (!s?.state?.running && !s?.state?.terminated) return r;
    r.restartCount = s.restartCount ?? 0;
    r.imageID = s.imageID ?? '';
    const t = s.state.terminated;
    const last: Terminated = t
      ? {
          kind: 'terminated',
          exitCode: t.exitCode,
          reason: t.reason ?? (t.exitCode === 0 ? 'Completed' : 'Error'),
          ...(t.message ? { message: t.message } : {}),
          startedAt: timeString(t.startedAt, now),
          finishedAt: timeString(t.finishedAt, now),
        }
      : {
          kind: 'terminated',
          exitCode: 137,
          reason: 'ContainerStatusUnknown',
          message: 'The container could not be located when the pod was terminated',
          startedAt: timeString(s.state.running?.startedAt, now),
          finishedAt: now,
        };
    if (shouldRestart(pod.spec?.restartPolicy, last.exitCode, isInit)) {
      r.lastTerminated = last;
      r.restartCount++;
    } else {
      r.state = last;
    }
    return r;
  };
  return {
    initContainers: (pod.spec?.initContainers ?? []).map((c) => record(c, true)),
    containers: (pod.spec?.containers ?? []).map((c) => record(c, false)),
    startTime: status.startTime ? timeString(status.startTime, now) : undefined,
  };
}
