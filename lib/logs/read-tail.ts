import type { CoreV1Api } from '@kubernetes/client-node';
import { DEFAULT_TAIL_BOUNDS, type LogTail, logTail, type TailBounds } from './log-tail.ts';
import { readPodLog } from './pod-log.ts';

/**
 * The most bytes asked of the API server for a tail: its limitBytes counts from the start of the lines
 * tailLines selects, so a log whose last lines are longer than this is cut at the end, not the start.
 */
export const TAIL_READ_LIMIT_BYTES = 64 * 1024;

export interface ReadTail extends LogTail {
  /** The last lines together were longer than TAIL_READ_LIMIT_BYTES: what is shown stops before the end. */
  endMissing: boolean;
}

/**
 * The tail of one container's log (log-tail.ts's bounds), reading no more than one line beyond them and at
 * most TAIL_READ_LIMIT_BYTES. Errors as readPodLog's (LogUnavailableError for a gone pod, a 403, no log).
 */
export async function readLogTail(
  core: Pick<CoreV1Api, 'readNamespacedPodLog'>,
  where: { namespace: string; pod: string; container?: string },
  bounds: TailBounds = DEFAULT_TAIL_BOUNDS,
): Promise<ReadTail> {
  const text = await readPodLog(core, {
    ...where,
    tailLines: bounds.maxLines + 1,
    limitBytes: TAIL_READ_LIMIT_BYTES,
  });
  const endMissing = Buffer.byteLength(text, 'utf8') >= TAIL_READ_LIMIT_BYTES;
  const tail = logTail(text, bounds, endMissing);
  return { ...tail, endMissing };
}
