import type { V1Container } from '@kubernetes/client-node';
import { abortableDelay } from '../../../../../lib/core/abort.ts';
import { type RunnerContext, runContainerOnce } from './container-runner.ts';
import { crashLoopMessage, nextBackoffMs, shouldRestart } from './restart.ts';
import type { ContainerRecord } from './status.ts';

type Log = (line: string, fields?: Record<string, unknown>) => void;

/**
 * Init containers one after another, each until it has succeeded once (false as soon as one fails for
 * good); regular containers all at once, each under the restart policy (true when all ended with 0).
 * Records already terminated (adopted from an earlier kubelet) are not run again.
 */
export async function runContainers(
  ctx: RunnerContext,
  log: Log,
  specs: V1Container[],
  records: ContainerRecord[],
  isInit: boolean,
): Promise<boolean> {
  if (!isInit) {
    const results = await Promise.all(specs.map((s, i) => runWithRestarts(ctx, log, s, records[i]!, false)));
    return results.every(Boolean);
  }
  for (const [i, spec] of specs.entries()) {
    if (!(await runWithRestarts(ctx, log, spec, records[i]!, true))) return false;
  }
  return true;
}

/**
 * Runs a container until the restart policy says stop or the pod stops; between runs the record waits in
 * CrashLoopBackOff with the last run as lastState, and restartCount grows when the next run starts.
 * Resolves true when the last run exited 0.
 */
async function runWithRestarts(
  ctx: RunnerContext,
  log: Log,
  spec: V1Container,
  record: ContainerRecord,
  isInit: boolean,
): Promise<boolean> {
  if (record.state.kind === 'terminated') return record.state.exitCode === 0;
  const pod = ctx.pod().metadata ?? {};
  const policy = ctx.pod().spec?.restartPolicy;
  let delayMs: number | undefined;
  for (;;) {
    const startedMs = Date.now();
    const terminated = await runContainerOnce(ctx, spec, record);
    if (!terminated) return false;
    log('container exited', {
      container: spec.name,
      exitCode: terminated.exitCode,
      restarts: record.restartCount,
      startedAtMs: terminated.processStartedAtMs,
      finishedAtMs: terminated.processExitedAtMs,
    });
    if (ctx.signal.aborted || !shouldRestart(policy, terminated.exitCode, isInit))
      return terminated.exitCode === 0;
    delayMs = nextBackoffMs(delayMs, Date.now() - startedMs, ctx.backoff);
    record.lastTerminated = terminated;
    const who = { name: pod.name ?? '', namespace: pod.namespace ?? '', uid: pod.uid ?? '' };
    record.state = {
      kind: 'waiting',
      reason: 'CrashLoopBackOff',
      message: crashLoopMessage(delayMs, spec.name, who),
    };
    ctx.changed();
    await abortableDelay(delayMs, ctx.signal).catch(() => undefined);
    if (ctx.signal.aborted) return false;
    record.restartCount++;
  }
}
