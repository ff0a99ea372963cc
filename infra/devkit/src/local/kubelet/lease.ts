import { CoordinationV1Api, type KubeConfig, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { abortableDelay } from '../../../../../lib/core/abort.ts';
import { apiErrorMessage, isConflict, isNotFound } from '../../../../../lib/kube/errors.ts';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

export interface LeaseOptions {
  kc: KubeConfig;
  nodeName: string;
  /** The Node's uid, for the Lease's ownerReference (so deleting the Node deletes its Lease). */
  nodeUid: () => string | undefined;
  signal: AbortSignal;
  log: (line: string, fields?: Record<string, unknown>) => void;
  leaseDurationSeconds?: number;
  /** How often the lease is renewed; the kubelet renews every quarter of the duration. */
  renewIntervalMs?: number;
  /** First retry delay after a failed renewal; doubles up to the renew interval. */
  retryInitialMs?: number;
}

/** The node's heartbeat Lease as the kubelet writes it. Pure. */
export function nodeLease(opts: {
  nodeName: string;
  nodeUid?: string;
  durationSeconds: number;
  base?: V1Lease;
}): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      ...(opts.base?.metadata ?? {}),
      name: opts.nodeName,
      namespace: NODE_LEASE_NAMESPACE,
      ...(opts.nodeUid
        ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: opts.nodeName, uid: opts.nodeUid }] }
        : {}),
    },
    spec: {
      holderIdentity: opts.nodeName,
      leaseDurationSeconds: opts.durationSeconds,
      renewTime: new V1MicroTime(),
    },
  };
}

/**
 * Renews the node Lease in kube-node-lease on a timer until the signal aborts: that renewal is the node's
 * heartbeat, which keeps the node lifecycle controller from marking it NotReady. A failed renewal (the API
 * server restarting, say) is retried sooner, with back-off, and never ends the loop.
 */
export async function renewNodeLease(opts: LeaseOptions): Promise<void> {
  const api = opts.kc.makeApiClient(CoordinationV1Api);
  const durationSeconds = opts.leaseDurationSeconds ?? 40;
  const intervalMs = opts.renewIntervalMs ?? (durationSeconds * 1000) / 4;
  const retryInitialMs = opts.retryInitialMs ?? 250;
  const name = opts.nodeName;
  const namespace = NODE_LEASE_NAMESPACE;
  let cached: V1Lease | undefined;
  let retryMs = retryInitialMs;
  let failing = false;

  const renew = async (attempt = 0): Promise<void> => {
    if (!cached) {
      try {
        cached = await api.readNamespacedLease({ name, namespace });
      } catch (error) {
        if (!isNotFound(error)) throw error;
        const body = nodeLease({ nodeName: name, nodeUid: opts.nodeUid(), durationSeconds });
        cached = await api.createNamespacedLease({ namespace, body });
        return;
      }
    }
    const body = nodeLease({ nodeName: name, nodeUid: opts.nodeUid(), durationSeconds, base: cached });
    try {
      cached = await api.replaceNamespacedLease({ name, namespace, body });
    } catch (error) {
      cached = undefined; // re-read next time: someone else wrote it, or it is gone
      if ((isConflict(error) || isNotFound(error)) && attempt < 3) return renew(attempt + 1);
      throw error;
    }
  };

  while (!opts.signal.aborted) {
    let delayMs = intervalMs;
    try {
      await renew();
      if (failing) opts.log('node lease renewed again', { node: name });
      failing = false;
      retryMs = retryInitialMs;
    } catch (error) {
      if (!failing)
        opts.log('node lease renewal failed; retrying', { node: name, error: apiErrorMessage(error) });
      failing = true;
      delayMs = Math.min(retryMs, intervalMs);
      retryMs = Math.min(retryMs * 2, intervalMs);
    }
    await abortableDelay(delayMs, opts.signal).catch(() => undefined);
  }
}
