import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { type CancelScheduled, type Scheduler, timerScheduler } from '../core/scheduler.ts';
import { loggableError } from '../kube/errors.ts';
import type { KubePort, ListedPods } from '../kube/port.ts';
import type { ActiveRun } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import type { KhState } from '../state/resources.ts';
import type { RunTimings } from './assess.ts';
import { startLeaseKeeper } from './lease-keeper.ts';
import { renewLease } from './renew-lease.ts';
import type { ReportReceiver } from './report-inbox.ts';
import {
  initialWaitMemory,
  observeWait,
  type RecordResult,
  type WaitDecision,
  type WaitObservation,
} from './wait-observe.ts';

export type WaitResult =
  /**
   * recorded: the outcome is in the khstate already (written from a delivered report); else the caller
   * records it, on held: the khstate as this wait last wrote or saw it (its write's precondition).
   */
  | {
      kind: 'finished';
      outcome: RunOutcome;
      removePods: boolean;
      pod: V1Pod | undefined;
      recorded?: true;
      held: KhState;
    }
  /** The invocation was cancelled or ran out of time budget; the run is left for the next one. */
  | { kind: 'interrupted'; reason: string }
  /** Someone else closed the run, or took it over (taken), while we waited. */
  | { kind: 'superseded'; reason: string; taken: boolean };

export interface AwaitDeps {
  kube: KubePort;
  clock: Clock;
  log: Log;
  /** When the wait's timers run: setTimeout unless a test drives them by hand. */
  scheduler?: Scheduler;
}

type Target = { namespace: string; checkName: string; run: ActiveRun; initialState: KhState };
export type AwaitOptions = {
  timings: RunTimings;
  leaseMs: number;
  runner: string;
  /** Cancels the wait (SIGTERM, the invocation's time budget): the result is then 'interrupted'. */
  signal: AbortSignal;
  onPhase?: (phase: string) => void;
  /** The check's pods as listed just before, with the list's resourceVersion: the pod watch starts there. */
  podsFrom?: ListedPods;
  /**
   * Whether the wait watches the khstate (default true). A run whose pod reports to this process's own
   * endpoint (deliveries) and that no other runner held hears of its report in-process and of a takeover
   * from its own writes' preconditions, so it needs no khstate watch.
   */
  watchState?: boolean;
  /** Reports handed in by this process's endpoint (report-inbox.ts), and how their outcome is written. */
  deliveries?: {
    open: (receiver: ReportReceiver) => () => void;
    /** Writes the outcome on held (the khstate as last written or seen), fenced as finishRun is. */
    record: (outcome: RunOutcome, held: KhState) => Promise<RecordResult>;
  };
};

/**
 * Waits for the run's end: feeds what the watch on its pod and khstate sees, the moments the last decision
 * asked to be woken at, and cancellation into observeWait, and acts on its decision. Renews the run's lease
 * meanwhile (startLeaseKeeper). Returns once decided, after every listener, timer, renewal and watch it
 * started has stopped.
 */
export async function awaitOutcome(deps: AwaitDeps, target: Target, opts: AwaitOptions): Promise<WaitResult> {
  const stop = new AbortController();
  // Stops renewing once this wait recorded the outcome (the run is closed), or with everything else.
  const leaseStop = new AbortController();
  stop.signal.addEventListener('abort', () => leaseStop.abort(), { once: true });
  let held = target.initialState;
  let recording: Promise<RecordResult> | undefined;
  const loop = startWaitLoop(deps, target, opts, stop, {
    held: () => held,
    record: (outcome) => {
      const record = opts.deliveries?.record;
      if (!record) return;
      opts.onPhase?.('recording');
      recording = record(outcome, held).catch((error: unknown): RecordResult => {
        deps.log.warn('could not record the delivered report; it is stored instead', {
          error: loggableError(error),
        });
        return { kind: 'failed' };
      });
      void recording.then((result) => {
        if (result.kind === 'recorded') leaseStop.abort();
        loop.observe({ kind: 'recorded', result, nowMs: deps.clock.nowMs() });
      });
    },
  });
  const closeInbox = opts.deliveries?.open(async (report) => {
    const before = recording;
    loop.observe({ kind: 'delivered', report, nowMs: deps.clock.nowMs() });
    if (!recording || recording === before) return 'declined';
    return (await recording).kind === 'recorded' ? 'recorded' : 'declined';
  });
  const onCancel = () =>
    loop.observe({ kind: 'cancelled', reason: String(opts.signal.reason ?? 'cancelled') });
  if (opts.signal.aborted) onCancel();
  else opts.signal.addEventListener('abort', onCancel, { once: true });

  const keeping = startLeaseKeeper({
    leaseMs: opts.leaseMs,
    heldUntilMs: target.run.leaseUntilMs,
    deadlineMs: target.run.deadlineMs,
    clock: deps.clock,
    scheduler: loop.scheduler,
    log: deps.log,
    signal: leaseStop.signal,
    renew: async () => {
      const renewal = await renewLease(deps, target, { leaseMs: opts.leaseMs, held });
      // A renewal's own write reaches the wait through the watch: its response may arrive after a newer
      // version (a report) the watch already delivered, and must not hide it. A superseded run is news, though.
      if (renewal.kind === 'renewed') {
        held = renewal.state;
        return 'renewed';
      }
      loop.observe({ kind: 'state', state: renewal.state, nowMs: deps.clock.nowMs() });
      return 'superseded';
    },
  });
  const watching = deps.kube
    .watchRun({
      namespace: target.namespace,
      checkName: target.checkName,
      runUuid: target.run.uuid,
      signal: stop.signal,
      watchState: opts.watchState ?? true,
      podsFrom: opts.podsFrom,
      onChange: (view) => {
        if (view.state) held = view.state;
        loop.observe({ kind: 'view', ...view, nowMs: deps.clock.nowMs() });
      },
      onInterruption: (reason) => deps.log.warn('watch interrupted; resuming', { reason }),
    })
    .catch((error: unknown) => loop.observe({ kind: 'cancelled', reason: `watch failed: ${String(error)}` }));

  try {
    loop.observe({ kind: 'tick', nowMs: deps.clock.nowMs() });
    return await loop.result;
  } finally {
    loop.cancelTick();
    closeInbox?.();
    opts.signal.removeEventListener('abort', onCancel);
    stop.abort();
    // A record write in flight (cancelled meanwhile) ends before the wait does: nothing lands after it.
    await Promise.all([watching, keeping, recording]);
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
function startWaitLoop(
  deps: AwaitDeps,
  target: Target,
  opts: AwaitOptions,
  stop: AbortController,
  act: { held: () => KhState; record: (outcome: RunOutcome) => void },
) {
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
    if (decision.kind === 'record') {
      act.record(decision.outcome);
      return;
    }
    if (decision.kind !== 'wait-until') {
      settle(resultOf(decision, act.held()));
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

function resultOf(
  decision: Exclude<WaitDecision, { kind: 'wait-until' | 'none' | 'record' }>,
  held: KhState,
): WaitResult {
  if (decision.kind !== 'finish') return decision;
  const { outcome, removePods, pod, recorded } = decision;
  return { kind: 'finished', outcome, removePods, pod, held, ...(recorded ? { recorded } : {}) };
}
