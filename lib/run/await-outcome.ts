import type { V1Pod } from '@kubernetes/client-node';
import { RUN_ID_LABEL } from '../check/pod-builder.ts';
import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { loggableError, WriteConflict } from '../kube/errors.ts';
import type { KubePort } from '../kube/port.ts';
import { type ActiveRun, readAcceptedReport, readActiveRun } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { claimRun } from '../state/record.ts';
import type { KhState } from '../state/resources.ts';
import { type Assessment, assessRun, isPodTerminal, type RunTimings } from './assess.ts';
import { leaseUntil } from './claim.ts';

const MAX_TIMER_MS = 2 ** 31 - 1;

export type WaitResult =
  | { kind: 'finished'; outcome: RunOutcome; removePods: boolean; pod: V1Pod | undefined }
  /** The invocation was cancelled or ran out of time budget; the run is left for the next one. */
  | { kind: 'interrupted'; reason: string }
  /** Someone else closed or took over the run while we waited. */
  | { kind: 'lost'; reason: string };

export interface AwaitDeps {
  kube: KubePort;
  clock: Clock;
  log: Log;
}

/**
 * Waits for the run's end, driven by watches on its pod and the khstate, plus one timer for the next
 * moment the assessment changes by itself (deadline, grace ends). Renews the run's lease meanwhile.
 */
export async function awaitOutcome(
  deps: AwaitDeps,
  target: { namespace: string; checkName: string; run: ActiveRun; initialState: KhState },
  opts: {
    timings: RunTimings;
    leaseMs: number;
    runner: string;
    signal: AbortSignal;
    /** Whether the run's pod is known to exist (just created or found); its absence then means deletion. */
    podExists: boolean;
    onPhase?: (phase: string) => void;
  },
): Promise<WaitResult> {
  const { kube, clock, log } = deps;
  const { run } = target;
  const stop = new AbortController();
  const signal = AbortSignal.any([stop.signal, opts.signal]);
  let state: KhState | null = target.initialState;
  let pod: V1Pod | undefined;
  // The driver created (or found) the pod before waiting: a pod absent from the first listing was deleted.
  let podSeen = opts.podExists;
  let primed = false;
  let terminalSinceMs: number | undefined;
  let lastPhase = '';
  let reportSeen = false;
  let timer: NodeJS.Timeout | undefined;
  let leaseTimer: NodeJS.Timeout | undefined;
  let settle!: (r: WaitResult) => void;
  const result = new Promise<WaitResult>((resolve) => {
    settle = (r) => {
      stop.abort();
      resolve(r);
    };
  });

  const phaseOf = (p: V1Pod | undefined) =>
    p ? (p.metadata?.deletionTimestamp ? 'Terminating' : (p.status?.phase ?? 'Pending')) : '';
  const evaluate = () => {
    if (stop.signal.aborted) return;
    const nowMs = clock.nowMs();
    const owner = readActiveRun(state);
    if (owner?.uuid !== run.uuid) {
      settle({ kind: 'lost', reason: 'the run was closed by another invocation' });
      return;
    }
    if (!primed && nowMs < run.deadlineMs) {
      // Nothing is decided before the first consistent view of pod and khstate; only the deadline stands.
      clearTimeout(timer);
      timer = setTimeout(evaluate, Math.min(MAX_TIMER_MS, run.deadlineMs - nowMs + 5));
      return;
    }
    if (pod && isPodTerminal(pod) && terminalSinceMs === undefined) terminalSinceMs = nowMs;
    const phase = phaseOf(pod);
    if (phase && phase !== lastPhase) {
      lastPhase = phase;
      opts.onPhase?.(`pod ${phase}`);
    }
    if (!reportSeen && readAcceptedReport(state)?.uuid === run.uuid) {
      reportSeen = true;
      opts.onPhase?.('report received');
    }
    const assessment: Assessment = assessRun(
      {
        run,
        checkName: target.checkName,
        namespace: target.namespace,
        state,
        pod,
        podSeen,
        podTerminalSinceMs: terminalSinceMs,
        nowMs,
      },
      opts.timings,
    );
    if (assessment.kind === 'finish') {
      settle({ kind: 'finished', outcome: assessment.outcome, removePods: assessment.removePods, pod });
      return;
    }
    clearTimeout(timer);
    // setTimeout fires at once for delays over 2^31-1 ms (~24.8 days): cap, and evaluate again then.
    timer = setTimeout(evaluate, Math.min(MAX_TIMER_MS, Math.max(0, assessment.untilMs - nowMs) + 5));
  };

  // The lease: renewed at half its length; a conflict means a report or another writer got in between,
  // so the next renewal simply reads again. Losing the run is noticed by evaluate().
  const renewLease = async () => {
    try {
      const current = await kube.readState(target.namespace, target.checkName);
      const active = readActiveRun(current);
      if (!current || active?.uuid !== run.uuid) {
        state = current;
        evaluate();
        return;
      }
      const renewed = {
        ...active,
        runner: opts.runner,
        leaseUntilMs: leaseUntil(clock.nowMs(), opts.leaseMs, run.deadlineMs),
      };
      state = await kube.replaceState(claimRun(current, renewed));
    } catch (error) {
      if (!(error instanceof WriteConflict))
        log.warn('lease renewal failed; retrying', { error: loggableError(error) });
    } finally {
      if (!stop.signal.aborted) leaseTimer = setTimeout(renewLease, Math.max(200, opts.leaseMs / 2));
    }
  };
  leaseTimer = setTimeout(renewLease, Math.max(200, opts.leaseMs / 2));

  const onCancel = () => settle({ kind: 'interrupted', reason: String(opts.signal.reason ?? 'cancelled') });
  if (opts.signal.aborted) onCancel();
  else opts.signal.addEventListener('abort', onCancel, { once: true });

  const watching = kube
    .watchRun({
      namespace: target.namespace,
      checkName: target.checkName,
      runUuid: run.uuid,
      signal,
      onChange: (view) => {
        const current = pickRunPod(view.pods, run.uuid);
        if (current?.metadata?.name !== pod?.metadata?.name) terminalSinceMs = undefined;
        pod = current;
        if (pod) podSeen = true;
        primed = true;
        if (view.state) state = view.state;
        evaluate();
      },
      onInterruption: (reason) => log.warn('watch interrupted; resuming', { reason }),
    })
    .catch((error: unknown) => settle({ kind: 'interrupted', reason: `watch failed: ${String(error)}` }));

  try {
    evaluate();
    return await result;
  } finally {
    clearTimeout(timer);
    clearTimeout(leaseTimer);
    opts.signal.removeEventListener('abort', onCancel);
    stop.abort();
    await watching;
  }
}

/**
 * The pod that speaks for the run: a replacement (after adoption) wins over the pod it replaced while that
 * one is still terminating; among equals, the newest.
 */
export function pickRunPod(pods: V1Pod[], runUuid: string): V1Pod | undefined {
  const ofRun = pods.filter((p) => p.metadata?.labels?.[RUN_ID_LABEL] === runUuid);
  const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
  return ofRun.sort(
    (a, b) =>
      Number(Boolean(a.metadata?.deletionTimestamp)) - Number(Boolean(b.metadata?.deletionTimestamp)) ||
      created(b) - created(a),
  )[0];
}
