import type { V1Pod } from '@kubernetes/client-node';
import { buildCheckerPod, KH_ENV, RUN_ID_LABEL } from '../check/pod-builder.ts';
import { validateCheck } from '../check/validate-check.ts';
import { formatMsAsGoDuration } from '../core/duration.ts';
import { shortId } from '../core/ids.ts';
import { WriteConflict } from '../kube/errors.ts';
import {
  ANNOTATION,
  newKhState,
  nextKhState,
  OutcomeKind,
  readAcceptedReport,
  readActiveRun,
  readConsecutiveFailures,
} from '../state/khstate.ts';
import { executionError, type RunOutcome } from '../state/outcome.ts';
import { resultAnnotations, toKubeTime } from '../state/record.ts';
import type { ValidCheck } from '../state/resources.ts';
import { type AcquireDeps, acquireRun } from './acquire.ts';
import { announceOutcome } from './announce.ts';
import { DEFAULT_TIMINGS, type RunTimings } from './assess.ts';
import { awaitOutcome } from './await-outcome.ts';
import { CheckNotFoundError } from './errors.ts';
import { finishRun, releaseRun } from './finish.ts';
import { podsToRemove } from './pod-hygiene.ts';

export interface IterationConfig {
  namespace: string;
  checkName: string;
  /** Who runs this iteration; becomes AuthoritativePod. */
  runner: string;
  /** The URL checker pods report to (KH_REPORTING_URL). */
  reportingUrl: string;
  timings?: RunTimings;
  leaseMs?: number;
  keepFinishedPods?: number;
  maxConflictRetries?: number;
  /** Cancels the wait: SIGTERM, or the end of the invocation's time budget. The run stays resumable. */
  signal: AbortSignal;
  onPhase?: (phase: string, extra?: Record<string, unknown>) => void;
}

export type IterationResult =
  | { kind: 'recorded'; runUuid: string; outcome: RunOutcome; adopted: boolean }
  | { kind: 'skipped'; reason: string; runUuid?: string }
  | { kind: 'interrupted'; runUuid: string; reason: string }
  | { kind: 'check-deleted'; runUuid: string };

export const ITERATION_DEFAULTS = { leaseMs: 30_000, keepFinishedPods: 3, maxConflictRetries: 8 } as const;

/**
 * One check iteration end to end: read and validate the khcheck, claim (or adopt) the run, clear earlier
 * pods, create the checker pod, wait for the outcome, record it in one write and release the claim.
 * Everything that must survive lives in the khstate, so a killed invocation is finished by the next.
 */
export async function runIteration(deps: AcquireDeps, cfg: IterationConfig): Promise<IterationResult> {
  const { kube, clock, log } = deps;
  const leaseMs = cfg.leaseMs ?? ITERATION_DEFAULTS.leaseMs;
  const maxAttempts = cfg.maxConflictRetries ?? ITERATION_DEFAULTS.maxConflictRetries;
  const phase = cfg.onPhase ?? (() => {});

  const source = await kube.readCheck(cfg.namespace, cfg.checkName);
  if (!source) throw new CheckNotFoundError(cfg.namespace, cfg.checkName);
  const validated = validateCheck(source);
  if (!validated.ok) {
    const outcome: RunOutcome = {
      kind: OutcomeKind.ExecutionError,
      ok: false,
      errors: [executionError(cfg.namespace, cfg.checkName, validated.reason)],
      node: '',
      durationMs: 0,
    };
    const atMs = await recordInvalidCheck(deps, cfg, validated.reason, outcome, maxAttempts);
    await announceOutcome(
      deps,
      { namespace: cfg.namespace, name: cfg.checkName, uid: source.metadata.uid },
      { runUuid: '', outcome, atMs, runner: cfg.runner },
    );
    return { kind: 'recorded', runUuid: '', adopted: false, outcome };
  }
  const check = validated.check;

  const acquired = await acquireRun(deps, check, { runner: cfg.runner, leaseMs, maxAttempts });
  if (acquired.kind === 'busy') {
    const reason = `another run of ${check.namespace}/${check.name} is live (runner ${acquired.run.runner}, until ${new Date(acquired.run.deadlineMs).toISOString()})`;
    log.info('skipped: run in progress', { run: shortId(acquired.run.uuid), holder: acquired.run.runner });
    return { kind: 'skipped', reason, runUuid: acquired.run.uuid };
  }
  const { run, adopted } = acquired;
  phase(adopted ? 'adopted' : 'claimed', { run: shortId(run.uuid) });

  await clearEarlierPods(deps, check, run.uuid, cfg.keepFinishedPods ?? ITERATION_DEFAULTS.keepFinishedPods);

  let existing = adopted
    ? (await kube.listCheckPods(check.namespace, check.name)).find(
        (p) => p.metadata?.labels?.[RUN_ID_LABEL] === run.uuid,
      )
    : undefined;
  const reported = readAcceptedReport(acquired.state)?.uuid === run.uuid;
  if (existing && !reported && reportingUrlOf(existing) !== cfg.reportingUrl) {
    // The pod reports to the endpoint of the runner that died; it can never reach us. Same run, new pod.
    await kube.removePod(check.namespace, existing.metadata?.name ?? '');
    log.info("replaced the adopted run's pod: its report endpoint is gone", { pod: existing.metadata?.name });
    existing = undefined;
  }
  if (!existing) {
    const created = await createCheckerPod(deps, check, run, cfg);
    if (created.kind === 'failed') {
      const outcome: RunOutcome = {
        kind: OutcomeKind.Failed,
        ok: false,
        errors: [executionError(check.namespace, check.name, created.reason)],
        node: '',
        durationMs: Math.max(0, clock.nowMs() - run.startedAtMs),
      };
      const recorded = await finishRun(deps, check, run, outcome, { runner: cfg.runner, maxAttempts });
      return { kind: 'recorded', runUuid: run.uuid, outcome: recorded ?? outcome, adopted };
    }
    phase('pod created', { pod: created.name });
  }

  const waited = await awaitOutcome(
    deps,
    { namespace: check.namespace, checkName: check.name, run, initialState: acquired.state },
    {
      timings: cfg.timings ?? DEFAULT_TIMINGS,
      leaseMs,
      runner: cfg.runner,
      signal: cfg.signal,
      podExists: true,
      onPhase: (p) => phase(p),
    },
  );
  if (waited.kind === 'interrupted') {
    await releaseRun(deps, check, run, maxAttempts);
    log.warn('interrupted; run left for the next invocation', {
      run: shortId(run.uuid),
      reason: waited.reason,
    });
    return { kind: 'interrupted', runUuid: run.uuid, reason: waited.reason };
  }
  if (waited.kind === 'lost') {
    log.warn('run closed by another invocation', { run: shortId(run.uuid) });
    return { kind: 'skipped', reason: waited.reason, runUuid: run.uuid };
  }
  if (waited.removePods) {
    for (const pod of (await kube.listCheckPods(check.namespace, check.name)).filter(
      (p) => p.metadata?.labels?.[RUN_ID_LABEL] === run.uuid,
    )) {
      await kube.removePod(check.namespace, pod.metadata?.name ?? '');
    }
  }
  if (waited.outcome.kind === OutcomeKind.Skipped && !(await kube.readCheck(check.namespace, check.name))) {
    await deleteOrphanState(deps, check);
    log.info('khcheck deleted mid-run; its khstate removed', { run: shortId(run.uuid) });
    return { kind: 'check-deleted', runUuid: run.uuid };
  }
  phase('recording', { outcome: waited.outcome.kind });
  const recorded = await finishRun(deps, check, run, waited.outcome, { runner: cfg.runner, maxAttempts });
  if (!recorded)
    return { kind: 'skipped', reason: 'the run was closed by another invocation', runUuid: run.uuid };
  return { kind: 'recorded', runUuid: run.uuid, outcome: recorded, adopted };
}

async function clearEarlierPods(deps: AcquireDeps, check: ValidCheck, runUuid: string, keep: number) {
  const pods = await deps.kube.listCheckPods(check.namespace, check.name);
  for (const pod of podsToRemove(pods, runUuid, keep)) {
    await deps.kube.removePod(check.namespace, pod.metadata?.name ?? '');
    deps.log.info('removed earlier checker pod', { pod: pod.metadata?.name, phase: pod.status?.phase });
  }
}

async function createCheckerPod(
  deps: AcquireDeps,
  check: ValidCheck,
  run: { uuid: string; startedAtMs: number; deadlineMs: number; pod: string },
  cfg: IterationConfig,
): Promise<{ kind: 'created'; name: string } | { kind: 'failed'; reason: string }> {
  const pod = buildCheckerPod({
    check,
    runUuid: run.uuid,
    reportingUrl: cfg.reportingUrl,
    deadlineEpochMs: run.deadlineMs,
    nowEpochMs: run.startedAtMs,
  });
  pod.metadata = { ...pod.metadata, name: run.pod };
  for (const name of [run.pod, `${run.pod}-${deps.clock.nowMs().toString(36)}`]) {
    try {
      pod.metadata.name = name;
      await deps.kube.createPod(pod);
      return { kind: 'created', name };
    } catch (error) {
      // An older run's pod can hold the name when two runs start within the same second.
      if (error instanceof WriteConflict) continue;
      const status = (error as { code?: number }).code;
      if (status === 422 || status === 400 || status === 403) {
        return {
          kind: 'failed',
          reason: `failed to create pod for checker: ${String((error as Error).message ?? error).split('\n')[0]}`,
        };
      }
      throw error;
    }
  }
  return { kind: 'failed', reason: `failed to create pod for checker: the name ${run.pod} is taken` };
}

/** Records an invalid khcheck as an execution error; returns when it was recorded (epoch ms). */
async function recordInvalidCheck(
  deps: AcquireDeps,
  cfg: IterationConfig,
  reason: string,
  outcome: RunOutcome,
  maxAttempts: number,
): Promise<number> {
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const state = (await deps.kube.readState(cfg.namespace, cfg.checkName)) ?? null;
    const base = state ?? newKhState(cfg.checkName, cfg.namespace);
    const nowMs = deps.clock.nowMs();
    const next = nextKhState(
      base,
      {
        OK: false,
        Errors: outcome.errors,
        RunDuration: formatMsAsGoDuration(0),
        Node: '',
        LastRun: toKubeTime(nowMs),
        AuthoritativePod: cfg.runner,
      },
      {
        [ANNOTATION.consecutiveFailures]: String(readConsecutiveFailures(state) + 1),
        ...resultAnnotations(base, outcome, { nowMs }),
      },
    );
    try {
      if (state) await deps.kube.replaceState(next);
      else await deps.kube.createState(next);
      deps.log.warn('invalid khcheck recorded as an execution error', {
        reason,
        live: Boolean(readActiveRun(state)),
      });
      return nowMs;
    } catch (error) {
      if (!(error instanceof WriteConflict)) throw error;
    }
  }
  throw new Error(`could not record the invalid check: ${maxAttempts} write conflicts in a row`);
}

async function deleteOrphanState(deps: AcquireDeps, check: ValidCheck) {
  const state = await deps.kube.readState(check.namespace, check.name);
  if (state?.metadata.resourceVersion) {
    await deps.kube
      .deleteState(check.namespace, check.name, state.metadata.resourceVersion)
      .catch(() => undefined);
  }
}

function reportingUrlOf(pod: V1Pod): string | undefined {
  return pod.spec?.containers?.[0]?.env?.find((e) => e.name === KH_ENV.reportingUrl)?.value;
}
