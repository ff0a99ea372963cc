import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { type CancelScheduled, type Scheduler, timerScheduler } from '../core/scheduler.ts';
import type { KubePort } from '../kube/port.ts';
import type { ActiveRun } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import type { KhState } from '../state/resources.ts';
import type { RunTimings } from './assess.ts';
import { startLeaseKeeper } from './lease-keeper.ts';
import { renewLease } from './renew-lease.ts';
import { initialWaitMemory, observeWait, type WaitDecision, type WaitObservation } from './wait-observe.ts';

export type WaitResult =
  | { kind: 'finished'; outcome: RunOutcome; removePods: boolean; pod: V1Pod | undefined }
  /** The invocation was cancelled or ran out of time budget; the run is left for the next one. */
  | { kind: 'interrupted'; reason: string }
  /** Someone else closed the run, or took it over (taken), while we waited. */
  | { kind: 'lost'; reason: string; taken: boolean };

export interface AwaitDeps {
  kube: KubePort;
  clock: Clock;
  log: Log;
  /** When the wait's timers run: setTimeout unless a test drives them by hand. */
  scheduler?: Scheduler;
}

type Target = { namespace: string; checkName: string; run: ActiveRun; initialState: KhState };
type AwaitOptions = {
  timings: RunTimings;
  leaseMs: number;
  runner: string;
  /** Cancels the wait (SIGTERM, the invocation's time budget): the result is then 'interrupted'. */
  signal: AbortSignal;
  onPhase?: (phase: string) => void;
};

/**
 * Waits for the run's end: feeds what the watch on its pod and khstate sees, the moments the last decision
 * asked to be woken at, and cancellation into observeWait, and acts on its decision. Renews the run's lease
 * meanwhile (startLeaseKeeper). Returns once decided, after every listener, timer, renewal and watch it
 * started has stopped.
 */
export async function awaitOutcome(deps: AwaitDeps, target: Target, opts: AwaitOptions): Promise<WaitResult> {
  const stop = new AbortController();
  const loop = startWaitLoop(deps, target, opts, stop);
  const onCancel = () =>
    loop.observe({ kind: 'cancelled', reason: String(opts.signal.reason ?? 'cancelled') });
  if (opts.signal.aborted) onCancel();
  else opts.signal.addEventListener('abort', onCancel, { once: true });

  const keeping = startLeaseKeeper({
    leaseMs: opts.leaseMs,
    heldUntilMs: target.run.leaseUntilMs,
    clock: deps.clock,
    scheduler: loop.scheduler,
    log: deps.log,
    signal: stop.signal,
    renew: async () => {
      const renewal = await renewLease(deps, target, opts);
      // A renewal's own write reaches the wait through the watch: its response may arrive after a newer
      // version (a report) the watch already delivered, and must not hide it. A lost run is news, though.
      if (renewal.kind === 'renewed') return 'renewed';
      loop.observe({ kind: 'state', state: renewal.state, nowMs: deps.clock.nowMs() });
      return 'lost';
    },
  });
  const watching = deps.kube
    .watchRun({
      namespace: target.namespace,
      checkName: target.checkName,
      runUuid: target.run.uuid,
      signal: stop.signal,
      onChange: (view) => loop.observe({ kind: 'view', ...view, nowMs: deps.clock.nowMs() }),
      onInterruption: (reason) => deps.log.warn('watch interrupted; resuming', { reason }),
    })
    .catch((error: unknown) => loop.observe({ kind: 'cancelled', reason: `watch failed: ${String(error)}` }));

  try {
    loop.observe({ kind: 'tick', nowMs: deps.clock.nowMs() });
    return await loop.result;
  } finally {
    loop.cancelTick();
    opts.signal.removeEventListener('abort', onCancel);
    stop.abort();
    await Promise.all([watching, keeping]);
  }
}

/**
 * How long to wait for a decision's untilMs. 5 ms of slack: a timer may fire a millisecond before its time,
 * and a tick before untilMs would only decide to wait again.
 */
export function tickDelayMs(untilMs: number, nowMs: number): number {
  return Math.max(0, untilMs - nowMs) + 5;
}

/** The reducer's memory and the one wake-up timer; result settles (and aborts stop) on the final decision. */
function startWaitLoop(deps: AwaitDeps, target: Target, opts: AwaitOptions, stop: AbortController) {
  const scheduler = deps.scheduler ?? timerScheduler;
  const ctx = {
    run: target.run,
    checkName: target.checkName,
    namespace: target.namespace,
    timings: opts.timings,
  };
  // The driver created or found the run's pod before waiting: its absence from the first view means deletion.
  let memory = initialWaitMemory(target.initialState, true);
  let cancelTick: CancelScheduled = () => {};
  let settle!: (result: WaitResult) => void;
  const result = new Promise<WaitResult>((resolve) => {
    settle = (r) => {
      stop.abort();
      resolve(r);
    };
  });
  const observe = (o: WaitObservation): void => {
    const step = observeWait(ctx, memory, o);
    memory = step.memory;
    for (const phase of step.phases) opts.onPhase?.(phase);
    const decision = step.decision;
    if (decision.kind === 'none') return;
    if (decision.kind !== 'wait-until') {
      settle(resultOf(decision));
      return;
    }
    const nowMs = o.kind === 'cancelled' ? deps.clock.nowMs() : o.nowMs;
    cancelTick();
    cancelTick = scheduler.schedule(
      () => observe({ kind: 'tick', nowMs: deps.clock.nowMs() }),
      tickDelayMs(decision.untilMs, nowMs),
    );
  };
  return { observe, result, scheduler, cancelTick: () => cancelTick() };
}

function resultOf(decision: Exclude<WaitDecision, { kind: 'wait-until' | 'none' }>): WaitResult {
  if (decision.kind !== 'finish') return decision;
  const { outcome, removePods, pod } = decision;
  return { kind: 'finished', outcome, removePods, pod };
}
