import { randomUUID } from 'node:crypto';
import { validateCheck } from '../check/validate-check.ts';
import { shortId } from '../core/ids.ts';
import { type ReportingUrl, reportingUrlFor } from '../report/report-token.ts';
import { type ActiveRun, readAcceptedReport } from '../state/khstate.ts';
import type { RunOutcome } from '../state/outcome.ts';
import { OutcomeKind } from '../state/outcome-kind.ts';
import { executionErrorOutcome } from '../state/outcomes.ts';
import type { KhState, ValidCheck } from '../state/resources.ts';
import { holdingOf } from '../state/run-holder.ts';
import { acquireRun } from './acquire.ts';
import type { AcquireDeps } from './acquire-deps.ts';
import { DEFAULT_TIMINGS, type RunTimings } from './assess.ts';
import { awaitOutcome, type WaitResult } from './await-outcome.ts';
import { clearEarlierPods, ensureCheckerPod } from './checker-pod.ts';
import { runDeliveries } from './deliveries.ts';
import { CheckNotFoundError } from './errors.ts';
import { finishRun, releaseRun } from './finish.ts';
import { awaitHandOver } from './hand-over.ts';
import { recordInvalidCheck } from './invalid-check.ts';
import { removeRunPods } from './remove-pod.ts';
import type { ReportInbox } from './report-inbox.ts';

export interface IterationConfig {
  namespace: string;
  checkName: string;
  /** Who runs this iteration; becomes AuthoritativePod. */
  runner: string;
  /**
   * This invocation's fencing token, written as the run's holder: unique per invocation (runner names
   * repeat). Default: a random one.
   */
  holder?: string;
  /**
   * Whether the reporting URL is an endpoint this process hosts (`khrun run`'s own): a runner that loses its
   * run to an adopter then keeps it serving until the run's report landed (awaitHandOver).
   */
  hostsReports?: boolean;
  /** The URL checker pods report to (KH_REPORTING_URL): fixed, or signed for each run (report-token.ts). */
  reportingUrl: ReportingUrl;
  /**
   * Where the endpoint this process hosts hands in reports for runs waited for here (report-inbox.ts): the
   * run records its outcome from one in a single write. A run that is not adopted then watches no khstate.
   */
  inbox?: ReportInbox;
  timings?: RunTimings;
  leaseMs?: number;
  keepFinishedPods?: number;
  maxConflictRetries?: number;
  /** Refuses the run from the khstate the claim reads (a Kuberhealthy runs the check: lib/takeover). */
  refuse?: (state: KhState | null) => string | undefined;
  /** Cancels the wait: SIGTERM, or the end of the invocation's time budget. The run stays resumable. */
  signal: AbortSignal;
  onPhase?: (phase: string, extra?: Record<string, unknown>) => void;
}

/**
 * What an invocation did. Only 'recorded' wrote an outcome; 'busy' (another run of the check is live) and
 * 'superseded' (another invocation closed or took this run) recorded nothing; 'interrupted' left the run
 * for the next invocation to adopt.
 */
export type IterationResult =
  | { kind: 'recorded'; runUuid: string; outcome: RunOutcome; adopted: boolean }
  | { kind: 'busy'; reason: string; runUuid: string }
  | { kind: 'refused'; reason: string; runUuid: '' }
  | { kind: 'superseded'; reason: string; runUuid: string }
  | { kind: 'interrupted'; runUuid: string; reason: string }
  | { kind: 'check-deleted'; runUuid: string };

/**
 * leaseMs: 150 s, renewed every 90 s (lease-keeper.ts), so a long check costs two lease writes in three
 * minutes and a failed renewal still leaves 60 s to retry in. The price: a runner that is killed has its
 * run adopted up to 150 s later, never later than the run's deadline (leaseUntil clamps the lease to it,
 * so a check shorter than the lease is never renewed at all).
 */
export const ITERATION_DEFAULTS = { leaseMs: 150_000, keepFinishedPods: 3, maxConflictRetries: 8 } as const;

type Settings = Required<Pick<IterationConfig, 'leaseMs' | 'keepFinishedPods' | 'maxConflictRetries'>>;

/**
 * One check iteration end to end: read and validate the khcheck, claim (or adopt) the run, clear earlier
 * pods, create the checker pod, wait for the outcome, record it in one write and release the claim.
 * Everything that must survive lives in the khstate, so a killed invocation is finished by the next.
 */
export async function runIteration(deps: AcquireDeps, cfg: IterationConfig): Promise<IterationResult> {
  const settings: Settings = { ...ITERATION_DEFAULTS, ...definedOf(cfg) };
  const phase = cfg.onPhase ?? (() => {});
  const source = await deps.kube.readCheck(cfg.namespace, cfg.checkName);
  if (!source) throw new CheckNotFoundError(cfg.namespace, cfg.checkName);
  const validated = validateCheck(source);
  if (!validated.ok) {
    const opts = { runner: cfg.runner, maxAttempts: settings.maxConflictRetries };
    const outcome = await recordInvalidCheck(deps, source, validated.reason, opts);
    return { kind: 'recorded', runUuid: '', adopted: false, outcome };
  }
  const check = validated.check;
  const acquired = await acquireRun(deps, check, {
    runner: cfg.runner,
    holder: cfg.holder ?? randomUUID(),
    leaseMs: settings.leaseMs,
    maxAttempts: settings.maxConflictRetries,
    refuse: cfg.refuse,
  });
  if (acquired.kind === 'refused') {
    deps.log.warn('refused', { reason: acquired.reason });
    return { kind: 'refused', reason: acquired.reason, runUuid: '' };
  }
  if (acquired.kind === 'busy') {
    const { run } = acquired;
    deps.log.info('skipped: run in progress', { run: shortId(run.uuid), holder: run.runner });
    const until = new Date(run.deadlineMs).toISOString();
    const reason = `another run of ${check.namespace}/${check.name} is live (runner ${run.runner}, until ${until})`;
    return { kind: 'busy', reason, runUuid: run.uuid };
  }
  const { run, adopted } = acquired;
  phase(adopted ? 'adopted' : 'claimed', { run: shortId(run.uuid) });
  // One list of the check's pods: clears earlier pods, finds an adopted run's, and starts the pod watch.
  const listed = await deps.kube.listCheckPodsAt(check.namespace, check.name);
  await clearEarlierPods(deps, check, run.uuid, settings.keepFinishedPods, listed.pods);
  const reported = readAcceptedReport(acquired.state)?.uuid === run.uuid;
  const runRef = {
    namespace: check.namespace,
    checkName: check.name,
    uuid: run.uuid,
    deadlineMs: run.deadlineMs,
  };
  const reportingUrl = reportingUrlFor(cfg.reportingUrl, runRef);
  const maxAttempts = settings.maxConflictRetries;
  const inbox =
    cfg.inbox &&
    runDeliveries(deps, check, run, cfg.inbox, {
      runRef,
      runner: cfg.runner,
      maxAttempts,
      signal: cfg.signal,
      onPhase: phase,
    });
  try {
    const pod = await ensureCheckerPod(deps, check, run, {
      adopted,
      reported,
      reportingUrl,
      signal: cfg.signal,
      pods: listed.pods,
    });
    if (pod.kind === 'failed') {
      const outcome = executionErrorOutcome(check, pod.reason, {
        node: '',
        durationMs: Math.max(0, deps.clock.nowMs() - run.startedAtMs),
      });
      const held = acquired.state;
      const recorded = await finishRun(deps, check, run, outcome, {
        runner: cfg.runner,
        maxAttempts,
        held,
        onPhase: phase,
      });
      return { kind: 'recorded', runUuid: run.uuid, outcome: recorded ?? outcome, adopted };
    }
    if (pod.kind === 'created') phase('pod created', { pod: pod.name });
    const created = pod.kind === 'created' ? [pod.pod] : [];
    const waited = await awaitOutcome(
      deps,
      { namespace: check.namespace, checkName: check.name, run, initialState: acquired.state },
      {
        timings: cfg.timings ?? DEFAULT_TIMINGS,
        leaseMs: settings.leaseMs,
        runner: cfg.runner,
        signal: cfg.signal,
        onPhase: (p) => phase(p),
        podsFrom: listed.resourceVersion ? { ...listed, pods: [...listed.pods, ...created] } : undefined,
        // Reports reach this run in-process, a takeover shows in its writes' preconditions: no khstate watch,
        // unless it adopted the run (the run's pod may report elsewhere, and its report lands in the khstate).
        watchState: !inbox || adopted,
        deliveries: inbox?.deliveries,
      },
    );
    if (waited.kind === 'finished' && waited.recorded) {
      await inbox?.announced();
      // The recording write was the fence: the run is closed, by us, so its pods are ours to remove.
      if (waited.removePods) await removeRunPods(deps, check, run.uuid);
      return { kind: 'recorded', runUuid: run.uuid, outcome: waited.outcome, adopted };
    }
    return await conclude(deps, check, { run, adopted, waited, cfg, settings });
  } finally {
    inbox?.close();
  }
}

/** Turns the wait's result into the iteration's: records the outcome, or leaves the run as it must be. */
async function conclude(
  deps: AcquireDeps,
  check: ValidCheck,
  ctx: { run: ActiveRun; adopted: boolean; waited: WaitResult; cfg: IterationConfig; settings: Settings },
): Promise<IterationResult> {
  const { run, waited, cfg } = ctx;
  const maxAttempts = ctx.settings.maxConflictRetries;
  if (waited.kind === 'interrupted') {
    await releaseRun(deps, check, run, maxAttempts);
    deps.log.warn('interrupted; run left for the next invocation', {
      run: shortId(run.uuid),
      reason: waited.reason,
    });
    return { kind: 'interrupted', runUuid: run.uuid, reason: waited.reason };
  }
  if (waited.kind === 'superseded') {
    // Stepping down: no outcome, no pod removed. A taken-over run goes on under its adopter, whose kept pod
    // may still report to the endpoint this process hosts.
    deps.log.warn('stepped down: the run is no longer ours', {
      run: shortId(run.uuid),
      reason: waited.reason,
    });
    if (waited.taken && cfg.hostsReports) {
      cfg.onPhase?.('handing over');
      const handOver = await awaitHandOver(deps, { ...check, checkName: check.name, run }, cfg.signal);
      deps.log.info('report endpoint no longer needed by the adopter', { run: shortId(run.uuid), handOver });
    }
    return { kind: 'superseded', reason: waited.reason, runUuid: run.uuid };
  }
  const superseded = { kind: 'superseded', reason: SUPERSEDED, runUuid: run.uuid } as const;
  if (
    waited.outcome.kind === OutcomeKind.Skipped &&
    !(await deps.kube.readCheck(check.namespace, check.name))
  ) {
    if (!(await deleteOrphanState(deps, check, run))) return superseded;
    if (waited.removePods) await removeRunPods(deps, check, run.uuid);
    deps.log.info('khcheck deleted mid-run; its khstate removed', { run: shortId(run.uuid) });
    return { kind: 'check-deleted', runUuid: run.uuid };
  }
  cfg.onPhase?.('recording', { outcome: waited.outcome.kind });
  const recorded = await finishRun(deps, check, run, waited.outcome, {
    runner: cfg.runner,
    maxAttempts,
    held: waited.held,
    onPhase: cfg.onPhase,
  });
  if (!recorded) return superseded;
  // The recording write was the fence: the run is closed, by us, so its pods are ours to remove.
  if (waited.removePods) await removeRunPods(deps, check, run.uuid);
  return { kind: 'recorded', runUuid: run.uuid, outcome: recorded, adopted: ctx.adopted };
}

const SUPERSEDED = 'the run was closed or taken over by another invocation';

/** Deletes the khstate of a deleted khcheck, only while this invocation holds the run (resourceVersion). */
async function deleteOrphanState(deps: AcquireDeps, check: ValidCheck, run: ActiveRun): Promise<boolean> {
  const state = await deps.kube.readState(check.namespace, check.name);
  if (holdingOf(state, run).kind !== 'held' || !state?.metadata.resourceVersion) return false;
  await deps.kube
    .deleteState(check.namespace, check.name, state.metadata.resourceVersion)
    .catch(() => undefined);
  return true;
}

/** The settings the caller set; undefined ones fall back to ITERATION_DEFAULTS. */
function definedOf(cfg: IterationConfig): Partial<Settings> {
  const out: Partial<Settings> = {};
  if (cfg.leaseMs !== undefined) out.leaseMs = cfg.leaseMs;
  if (cfg.keepFinishedPods !== undefined) out.keepFinishedPods = cfg.keepFinishedPods;
  if (cfg.maxConflictRetries !== undefined) out.maxConflictRetries = cfg.maxConflictRetries;
  return out;
}
