/** Restart back-off of the process kubelet: the kubelet's shape (doubling, capped), with small numbers. */
export interface RestartBackoff {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_RESTART_BACKOFF: RestartBackoff = { initialMs: 500, maxMs: 10_000 };

/** Whether a container that exited with exitCode runs again under the pod's restartPolicy. Pure. */
export function shouldRestart(restartPolicy: string | undefined, exitCode: number, isInit: boolean): boolean {
  const policy = restartPolicy ?? 'Always';
  if (policy === 'Never') return false;
  // Init containers must succeed once; under Always they are retried like OnFailure.
  if (isInit || policy === 'OnFailure') return exitCode !== 0;
  return true;
}

/**
 * The delay before the next start, given the previous delay and how long the last run lasted: doubles per
 * crash, capped; a run that lasted twice the cap resets it, as the kubelet forgets a crash loop. Pure.
 */
export function nextBackoffMs(
  previousMs: number | undefined,
  ranForMs: number,
  backoff: RestartBackoff,
): number {
  if (previousMs === undefined || ranForMs > 2 * backoff.maxMs) return backoff.initialMs;
  return Math.min(previousMs * 2, backoff.maxMs);
}

/** The kubelet's CrashLoopBackOff message. */
export function crashLoopMessage(
  delayMs: number,
  container: string,
  pod: { name: string; namespace: string; uid: string },
): string {
  const delay = delayMs % 1000 === 0 ? `${delayMs / 1000}s` : `${delayMs}ms`;
  return `back-off ${delay} restarting failed container=${container} pod=${pod.name}_${pod.namespace}(${pod.uid})`;
}
