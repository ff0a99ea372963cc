import type { V1Pod } from '@kubernetes/client-node';
import { isRunPod } from '../check/run-label.ts';
import { type ActiveRun, readAcceptedReport } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { reportedOutcome } from '../state/outcomes.ts';
import type { KhState } from '../state/resources.ts';
import { type Holding, holdingOf, supersededReason } from '../state/run-holder.ts';
import { assessRun, isPodTerminal, type RunTimings } from './assess.ts';
import type { DeliveredReport } from './report-inbox.ts';

/** What stays fixed while one run is waited for. */
export interface WaitContext {
  run: ActiveRun;
  checkName: string;
  namespace: string;
  timings: RunTimings;
}

/** What the wait carries from one observation to the next. */
export interface WaitMemory {
  /** The khstate last seen, from the watch or from a fresh read. */
  state: KhState | null;
  /** The pod that speaks for the run (pickRunPod), as last seen. */
  pod: V1Pod | undefined;
  /** Whether the run's pod ever existed: one that existed and is gone was deleted, not never created. */
  podSeen: boolean;
  /** Whether the watch delivered its first consistent view of pods and khstate. */
  primed: boolean;
  /** When the current pod was first seen terminal; forgotten when another pod speaks for the run. */
  terminalSinceMs: number | undefined;
  /** The pod phase last announced ('' before the first). */
  lastPhase: string;
  reportSeen: boolean;
  /** A report handed in by this process's endpoint, its outcome being written (the 'record' decision). */
  delivered?: DeliveredReport;
  /** The outcome this wait wrote from a delivered report; the run is closed, the pod gets its exit grace. */
  recorded?: { outcome: RunOutcome; reportAtMs: number };
  /** A final decision was made; later observations decide nothing. */
  over: boolean;
}

/** How the 'record' decision's write ended, as the driver observes it back. */
export type RecordResult =
  | { kind: 'recorded'; outcome: RunOutcome }
  /** The run was no longer this invocation's: nothing was written. */
  | { kind: 'superseded'; holding: Exclude<Holding, { kind: 'held' }> }
  /** The write failed (an unreachable API server, conflicts without end): the report goes the usual way. */
  | { kind: 'failed' };

export type WaitObservation =
  /** The watch's consistent view of the run's pods and the khstate (null: the watch holds none). */
  | { kind: 'view'; pods: V1Pod[]; state: KhState | null; nowMs: number }
  /** A fresh read of the khstate (the lease renewal's); unlike a view's, a null one means it is gone. */
  | { kind: 'state'; state: KhState | null; nowMs: number }
  /** Time passed: the moment the last decision asked to be woken at, or earlier. */
  | { kind: 'tick'; nowMs: number }
  /** The invocation was cancelled, or the watch failed for good. */
  | { kind: 'cancelled'; reason: string }
  /** A report for this run, handed in by the endpoint this process hosts: taken when the decision is 'record'. */
  | { kind: 'delivered'; report: DeliveredReport; nowMs: number }
  /** The 'record' decision's write ended. */
  | { kind: 'recorded'; result: RecordResult; nowMs: number };

export type WaitDecision =
  /** recorded: the outcome is written already (from a delivered report); else the driver records it. */
  | { kind: 'finish'; outcome: RunOutcome; removePods: boolean; pod: V1Pod | undefined; recorded?: true }
  /**
   * Write this outcome now (the delivered report's) and observe how that ended ('recorded'); the wait goes
   * on meanwhile, so a pod that keeps running after its report still gets its exit grace, on the same watch.
   */
  | { kind: 'record'; outcome: RunOutcome }
  /**
   * The run is no longer this invocation's: closed by someone else, or taken over (adopted) by another
   * invocation after this one's lease lapsed (taken: true; the run goes on, under its new holder).
   */
  | { kind: 'superseded'; reason: string; taken: boolean }
  | { kind: 'interrupted'; reason: string }
  /** Nothing is final yet; observe again at untilMs at the latest (a watch event may come sooner). */
  | { kind: 'wait-until'; untilMs: number }
  /** The wait was already over before this observation. */
  | { kind: 'none' };

export interface WaitStep {
  memory: WaitMemory;
  decision: WaitDecision;
  /** Progress to announce, in order: `pod <Phase>` when the pod's phase changes, `report received` once. */
  phases: string[];
}

/**
 * The memory a wait starts with. podExists: the driver created (or found) the pod just before waiting, so a
 * pod absent from the watch's first view was deleted rather than never created.
 */
export function initialWaitMemory(state: KhState | null, podExists: boolean): WaitMemory {
  return {
    state,
    pod: undefined,
    podSeen: podExists,
    primed: false,
    terminalSinceMs: undefined,
    lastPhase: '',
    reportSeen: false,
    over: false,
  };
}

/**
 * The wait as a reducer: from what it remembers and one new observation, the next memory and what to do.
 * Pure (time comes in the observation), level-based (every observation re-decides from the whole memory),
 * and final decisions are given once: after finish, superseded or interrupted, every observation yields none.
 */
export function observeWait(ctx: WaitContext, memory: WaitMemory, o: WaitObservation): WaitStep {
  if (memory.over) return { memory, decision: { kind: 'none' }, phases: [] };
  switch (o.kind) {
    case 'cancelled':
      return final({ memory, phases: [] }, { kind: 'interrupted', reason: o.reason });
    case 'view': {
      const pod = pickRunPod(o.pods, ctx.run.uuid);
      const samePod = pod?.metadata?.name === memory.pod?.metadata?.name;
      const next: WaitMemory = {
        ...memory,
        pod,
        podSeen: memory.podSeen || pod !== undefined,
        primed: true,
        terminalSinceMs: samePod ? memory.terminalSinceMs : undefined,
        // A watch that lost sight of the khstate proves nothing; a fresh read ('state') does.
        state: o.state ?? memory.state,
      };
      return decide(ctx, next, o.nowMs);
    }
    case 'state':
      return decide(ctx, { ...memory, state: o.state }, o.nowMs);
    case 'tick':
      return decide(ctx, memory, o.nowMs);
    case 'delivered':
      return takeDelivery(ctx, memory, o.report);
    case 'recorded':
      return afterRecord(ctx, memory, o.result, o.nowMs);
  }
}

/**
 * Takes a delivered report as the run's outcome when the run would have accepted it into its khstate
 * (accept-report.ts): still this invocation's, before its deadline, the first report, nothing decided yet.
 * Anything else is declined (decision 'none'), and the endpoint stores the report as any other.
 */
function takeDelivery(ctx: WaitContext, memory: WaitMemory, report: DeliveredReport): WaitStep {
  const none: WaitStep = { memory, decision: { kind: 'none' }, phases: [] };
  if (memory.delivered || memory.recorded || report.atMs > ctx.run.deadlineMs) return none;
  if (holdingOf(memory.state, ctx.run).kind !== 'held') return none;
  if (readAcceptedReport(memory.state)?.uuid === ctx.run.uuid) return none;
  const outcome = reportedOutcome(report, ctx.run, memory.pod?.spec?.nodeName ?? '');
  const phases = memory.reportSeen ? [] : ['report received'];
  return {
    memory: { ...memory, delivered: report, reportSeen: true },
    decision: { kind: 'record', outcome },
    phases,
  };
}

/** The record write ended: the pod's exit grace begins, the run was superseded, or the wait goes on as before. */
function afterRecord(ctx: WaitContext, memory: WaitMemory, result: RecordResult, nowMs: number): WaitStep {
  const reportAtMs = memory.delivered?.atMs ?? nowMs;
  const next: WaitMemory = { ...memory, delivered: undefined };
  if (result.kind === 'superseded') {
    const taken = result.holding.kind === 'taken';
    return final(
      { memory: next, phases: [] },
      { kind: 'superseded', reason: supersededReason(result.holding), taken },
    );
  }
  if (result.kind === 'recorded') next.recorded = { outcome: result.outcome, reportAtMs };
  return decide(ctx, next, nowMs);
}

/**
 * After its outcome was recorded from a delivered report: the pod exits by itself (kept, as any finished
 * pod), or is removed once exitGraceMs passed since the report (a sidecar that never stops).
 */
function exitGrace(ctx: WaitContext, memory: WaitMemory, nowMs: number): WaitStep {
  const recorded = memory.recorded as NonNullable<WaitMemory['recorded']>;
  const { pod } = memory;
  const finish = (removePods: boolean) =>
    final(
      { memory, phases: notice(memory, ctx.run.uuid, nowMs).phases },
      { kind: 'finish', outcome: recorded.outcome, removePods, pod, recorded: true },
    );
  if (!pod || isPodTerminal(pod)) return finish(false);
  const graceEndMs = recorded.reportAtMs + ctx.timings.exitGraceMs;
  if (nowMs >= graceEndMs) return finish(true);
  const noticed = notice(memory, ctx.run.uuid, nowMs);
  return { ...noticed, decision: { kind: 'wait-until', untilMs: graceEndMs } };
}

function decide(ctx: WaitContext, memory: WaitMemory, nowMs: number): WaitStep {
  const { run } = ctx;
  // The run is closed by our own write (a watched khstate shows it so): only the pod's exit is left.
  if (memory.recorded) return exitGrace(ctx, memory, nowMs);
  // Our write is in flight: nothing else is decided until it ended, also not what the watch shows of it.
  if (memory.delivered) return { memory, decision: { kind: 'none' }, phases: [] };
  const holding = holdingOf(memory.state, run);
  if (holding.kind !== 'held') {
    const superseded = {
      kind: 'superseded',
      reason: supersededReason(holding),
      taken: holding.kind === 'taken',
    } as const;
    return final({ memory, phases: [] }, superseded);
  }
  if (!memory.primed && nowMs < run.deadlineMs) {
    // Nothing is decided before the first consistent view of pod and khstate; only the deadline stands.
    return { memory, decision: { kind: 'wait-until', untilMs: run.deadlineMs }, phases: [] };
  }
  const noticed = notice(memory, run.uuid, nowMs);
  const m = noticed.memory;
  const assessment = assessRun(
    {
      run,
      checkName: ctx.checkName,
      namespace: ctx.namespace,
      state: m.state,
      pod: m.pod,
      // Before the first view nothing was seen of the pod: missing from no view, it was not deleted (a
      // deadline shorter than the watch's first list, e.g. a 1s timeout on a busy API server, times out).
      podSeen: m.primed && m.podSeen,
      podTerminalSinceMs: m.terminalSinceMs,
      nowMs,
    },
    ctx.timings,
  );
  if (assessment.kind === 'finish') {
    const { outcome, removePods } = assessment;
    return final(noticed, { kind: 'finish', outcome, removePods, pod: m.pod });
  }
  return { ...noticed, decision: { kind: 'wait-until', untilMs: assessment.untilMs } };
}

/** Remembers when the pod turned terminal, and what to announce: a new pod phase, the report's arrival. */
function notice(m: WaitMemory, runUuid: string, nowMs: number): Omit<WaitStep, 'decision'> {
  const phases: string[] = [];
  const terminalSinceMs = m.terminalSinceMs ?? (m.pod && isPodTerminal(m.pod) ? nowMs : undefined);
  const phase = phaseOf(m.pod);
  const lastPhase = phase || m.lastPhase;
  if (lastPhase !== m.lastPhase) phases.push(`pod ${lastPhase}`);
  const reportSeen = m.reportSeen || readAcceptedReport(m.state)?.uuid === runUuid;
  if (reportSeen && !m.reportSeen) phases.push('report received');
  return { memory: { ...m, terminalSinceMs, lastPhase, reportSeen }, phases };
}

function final(step: Omit<WaitStep, 'decision'>, decision: WaitDecision): WaitStep {
  return { memory: { ...step.memory, over: true }, decision, phases: step.phases };
}

/** The phase to announce: Terminating once deleted, Pending before the kubelet says more; '' for no pod. */
function phaseOf(pod: V1Pod | undefined): string {
  if (!pod) return '';
  return pod.metadata?.deletionTimestamp ? 'Terminating' : (pod.status?.phase ?? 'Pending');
}

/**
 * The pod that speaks for the run: a replacement (after adoption) wins over the pod it replaced while that
 * one is still terminating; among equals, the newest.
 */
export function pickRunPod(pods: V1Pod[], runUuid: string): V1Pod | undefined {
  const ofRun = pods.filter((p) => isRunPod(p, runUuid));
  const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();
  return ofRun.sort(
    (a, b) =>
      Number(Boolean(a.metadata?.deletionTimestamp)) - Number(Boolean(b.metadata?.deletionTimestamp)) ||
      created(b) - created(a),
  )[0];
}
