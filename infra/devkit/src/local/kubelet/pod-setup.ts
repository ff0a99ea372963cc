import type { V1Pod } from '@kubernetes/client-node';
import { abortableDelay } from '../../../../../lib/core/abort.ts';
import { apiErrorMessage } from '../../../../../lib/kube/errors.ts';
import type { IpPool } from './ip-pool.ts';
import type { RestartBackoff } from './restart.ts';
import type { Sandbox, SandboxOps } from './sandbox.ts';

/**
 * Calls attempt() until it succeeds or the signal aborts (then undefined), backing off between failures
 * (doubling, capped) and reporting each one as `<reason>: <message>`: the kubelet retries a pod's sandbox
 * and volumes the same way (FailedCreatePodSandBox, FailedMount) for as long as the pod exists.
 */
export async function retryUntilStopped<T>(
  reason: string,
  attempt: () => Promise<T>,
  opts: {
    signal: AbortSignal;
    backoff: RestartBackoff;
    onFailure: (message: string, retryInMs: number) => void;
  },
): Promise<T | undefined> {
  let delayMs = opts.backoff.initialMs;
  while (!opts.signal.aborted) {
    try {
      return await attempt();
    } catch (error) {
      opts.onFailure(`${reason}: ${apiErrorMessage(error)}`, delayMs);
      await abortableDelay(delayMs, opts.signal).catch(() => undefined);
      delayMs = Math.min(delayMs * 2, opts.backoff.maxMs);
    }
  }
  return undefined;
}

/**
 * The pod's network sandbox: an address from the pool (the one in its status when it had one) and a
 * network namespace holding it; for hostNetwork pods, the host's address and namespace. The address goes
 * back to the pool when the namespace cannot be made.
 */
export async function createSandbox(
  pod: V1Pod,
  deps: { ipPool: IpPool; sandboxOps: SandboxOps; hostIp: string },
): Promise<Sandbox> {
  if (pod.spec?.hostNetwork) return { podIp: deps.hostIp };
  const podIp = deps.ipPool.allocate(pod.status?.podIP);
  try {
    return { podIp, ...(await deps.sandboxOps.create(pod.metadata!.uid!, podIp)) };
  } catch (error) {
    deps.ipPool.release(podIp);
    throw error;
  }
}
