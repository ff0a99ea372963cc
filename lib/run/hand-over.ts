import type { Clock } from '../core/clock.ts';
import { type CancelScheduled, type Scheduler, timerScheduler } from '../core/scheduler.ts';
import type { KubePort } from '../kube/port.ts';
import { type ActiveRun, readAcceptedReport, readActiveRun } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { tickDelayMs } from './await-outcome.ts';

/**
 * Whether a run in which this invocation was superseded by an adopter can still need our report endpoint: not once the run
 * is closed, once its report landed, or past its deadline (no report is accepted then). Pure.
 */
export function handOverDone(state: KhState | null, run: ActiveRun, nowMs: number): boolean {
  if (nowMs >= run.deadlineMs) return true;
  if (!state) return false;
  if (readActiveRun(state)?.uuid !== run.uuid) return true;
  return readAcceptedReport(state)?.uuid === run.uuid;
}

/**
 * A runner whose run was taken over after its lease lapsed steps down: it writes nothing and removes no pod.
 * But the adopter kept the run's pod, which reports to the endpoint this runner hosts (only this process
 * holds the key its URL is signed with), so the endpoint stays up until the report landed, the run ended
 * or its deadline passed (handOverDone), or the invocation is cancelled. Watches the khstate; returns once
 * the watch and the timer it started have stopped.
 */
export async function awaitHandOver(
  deps: { kube: KubePort; clock: Clock; scheduler?: Scheduler },
  target: { namespace: string; checkName: string; run: ActiveRun },
  signal: AbortSignal,
): Promise<'handed-over' | 'interrupted'> {
  const stop = new AbortController();
  let settle!: (how: 'handed-over' | 'interrupted') => void;
  const result = new Promise<'handed-over' | 'interrupted'>((resolve) => {
    settle = (how) => {
      stop.abort();
      resolve(how);
    };
  });
  const check = (state: KhState | null) => {
    if (handOverDone(state, target.run, deps.clock.nowMs())) settle('handed-over');
  };
  const onCancel = () => settle('interrupted');
  const scheduler = deps.scheduler ?? timerScheduler;
  const cancelTimer: CancelScheduled = scheduler.schedule(
    () => check(null),
    tickDelayMs(target.run.deadlineMs, deps.clock.nowMs()),
  );
  if (signal.aborted) onCancel();
  else signal.addEventListener('abort', onCancel, { once: true });
  const watching = stop.signal.aborted
    ? Promise.resolve()
    : deps.kube
        .watchRun({
          namespace: target.namespace,
          checkName: target.checkName,
          runUuid: target.run.uuid,
          signal: stop.signal,
          onChange: (view) => check(view.state),
        })
        .catch(() => settle('interrupted'));
  try {
    return await result;
  } finally {
    cancelTimer();
    signal.removeEventListener('abort', onCancel);
    stop.abort();
    await watching;
  }
}
