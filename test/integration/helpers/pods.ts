import type { V1Container, V1Pod } from '@kubernetes/client-node';

/** A container that runs `sh -c script`; the image is a placeholder, the process kubelet runs the command. */
export function shContainer(name: string, script: string, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: 'busybox:1.36', command: ['sh', '-c', script], ...extra };
}

/** A pod of the given containers (restartPolicy Never unless overridden), for the real scheduler to place. */
export function podOf(
  name: string,
  containers: V1Container[],
  spec: Partial<NonNullable<V1Pod['spec']>> = {},
): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { restartPolicy: 'Never', terminationGracePeriodSeconds: 5, containers, ...spec },
  };
}

/** The pid of a container, from the process kubelet's containerID `proc://<pid>`. */
export function pidOf(pod: V1Pod, container: string): number {
  const id = pod.status?.containerStatuses?.find((c) => c.name === container)?.containerID ?? '';
  const pid = Number(/^proc:\/\/(\d+)$/.exec(id)?.[1]);
  if (!Number.isInteger(pid)) throw new Error(`container ${container} has no proc:// containerID: ${id}`);
  return pid;
}

/** Whether a process exists and is not a zombie. */
export async function processAlive(pid: number): Promise<boolean> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  if (!status) return false;
  return !/^State:\s+Z/m.test(status);
}
