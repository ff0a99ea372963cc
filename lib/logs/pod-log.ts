import type { CoreV1Api } from '@kubernetes/client-node';
import { ApiErrorKind, apiErrorMessage, classifyApiError, statusCodeOf } from '../kube/errors.ts';

/** Why a pod's log could not be read, as data: the pod is gone, the caller may not, or nothing to read yet. */
export const LogUnavailableReason = {
  /** No such pod (any more): khrun keeps only KHRUN_KEEP_FINISHED_PODS finished pods per check. */
  Gone: 'gone',
  /** The caller's identity may not `get pods/log` there. */
  Forbidden: 'forbidden',
  /** The container has not started (or its log was not kept): the API server answers 400. */
  NotStarted: 'not-started',
} as const;
export type LogUnavailableReason = (typeof LogUnavailableReason)[keyof typeof LogUnavailableReason];

export class LogUnavailableError extends Error {
  override readonly name = 'LogUnavailableError';
  constructor(
    readonly reason: LogUnavailableReason,
    readonly namespace: string,
    readonly pod: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export interface PodLogRequest {
  namespace: string;
  pod: string;
  /** Which container; default: the pod's only one (the API server refuses to guess between several). */
  container?: string;
  /** Only the last lines (the API server's tailLines). */
  tailLines?: number;
  /** At most this many bytes from the start of what is sent (the API server's limitBytes). */
  limitBytes?: number;
}

/**
 * One container's log through the API server's pods/log (the kubelet serves it from the node). A missing
 * pod, a 403 and a container without a log are LogUnavailableErrors that say so; anything else is thrown
 * as it came.
 */
export async function readPodLog(
  core: Pick<CoreV1Api, 'readNamespacedPodLog'>,
  req: PodLogRequest,
): Promise<string> {
  const { namespace, pod } = req;
  try {
    const text = await core.readNamespacedPodLog({
      name: pod,
      namespace,
      ...(req.container ? { container: req.container } : {}),
      ...(req.tailLines === undefined ? {} : { tailLines: req.tailLines }),
      ...(req.limitBytes === undefined ? {} : { limitBytes: req.limitBytes }),
    });
    return typeof text === 'string' ? text : String(text ?? '');
  } catch (error) {
    const unavailable = (reason: LogUnavailableReason, message: string) =>
      new LogUnavailableError(reason, namespace, pod, message, { cause: error });
    switch (classifyApiError(error)) {
      case ApiErrorKind.NotFound:
        throw unavailable(LogUnavailableReason.Gone, `pod ${namespace}/${pod} no longer exists`);
      case ApiErrorKind.Forbidden:
        throw unavailable(
          LogUnavailableReason.Forbidden,
          `forbidden (403): cannot get pods/log in namespace ${namespace} (${apiErrorMessage(error)})`,
        );
      default:
        if (statusCodeOf(error) === 400)
          throw unavailable(
            LogUnavailableReason.NotStarted,
            `no log of pod ${namespace}/${pod} yet (${apiErrorMessage(error)})`,
          );
        throw error;
    }
  }
}
