import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import type { KhJob } from '../job/khjob.ts';
import { done, RetriesExhausted, updateKhStateWithRetry, write } from '../kube/cas.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { type DispatchClaim, readDispatchClaim, withDispatchClaim } from '../state/dispatch-claim.ts';
import { newKhState } from '../state/khstate.ts';
import type { KhCheck, KhState } from '../state/resources.ts';
import { kuberhealthyGuard } from '../takeover/guard.ts';
import { DEFAULT_DUE_TIMINGS, type DueDecision, type DueTimings, decideDue } from './due.ts';
import { releaseClaim } from './release-claim.ts';
import type { CheckRef } from './run-job.ts';
import { scheduleOf } from './schedule-of.ts';
import { dispatchDueHealthChecks, type HealthCheckWrites } from './tick-healthchecks.ts';
import { dispatchDueJobs } from './tick-jobs.ts';

/** What a tick needs from the API server, shaped like the domain; the real one is tick-kube.ts. */
export interface TickKube {
  listChecks(scope: NamespaceScope): Promise<KhCheck[]>;
  listStates(scope: NamespaceScope): Promise<KhState[]>;
  readState(namespace: string, name: string): Promise<KhState | null>;
  /** Throws WriteConflict when it exists already; writer names the loop (user agent). */
  createState(state: KhState, writer?: string): Promise<KhState>;
  /** metadata.resourceVersion is the precondition; throws WriteConflict on 409. */
  replaceState(state: KhState, writer?: string): Promise<KhState>;
  /** The khjobs in scope ([] where the khjob CRD is not installed); absent: the tick runs no khjobs. */
  listJobs?(scope: NamespaceScope): Promise<KhJob[]>;
  /** The HealthChecks in scope ([] where v3's CRD is not installed), and the writes of their dispatch claim. */
  listHealthChecks?(scope: NamespaceScope): Promise<HealthCheck[]>;
  healthChecks?: HealthCheckWrites;
}

/** Sends one invocation of the runner for a check: a Job (cluster mode) or an async Lambda call (AWS). */
export interface Dispatcher {
  /** The name the invocation will have, recorded in the claim before it is sent. */
  refFor(check: CheckRef, nowMs: number): string;
  dispatch(check: CheckRef, ref: string): Promise<void>;
  /** Whether it can send a khjob's run (CheckRef kind khjob). */
  runsKhJobs?: boolean;
  /** Whether it can send a HealthCheck's run (CheckRef kind healthcheck). */
  runsHealthChecks?: boolean;
}

export type TickEntry = {
  check: string;
  decision: DueDecision;
  result: 'dispatched' | 'not-due' | 'lost' | 'failed' | 'refused';
  ref?: string;
  error?: string;
};

export interface TickConfig {
  scope: NamespaceScope;
  /** Who dispatches (pod name, Lambda request id): written into the claim. */
  identity: string;
  timings?: DueTimings;
  maxAttempts?: number;
  /** Dispatch checks a Kuberhealthy runs too (KHRUN_TAKE_OVER); else they are skipped as 'refused'. */
  takeOver?: boolean;
}

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

/**
 * One tick: finds the checks that are due and dispatches each as its own invocation; never runs a check
 * itself. For each due check it first takes the dispatch claim with a compare-and-swap on the khstate, so
 * two ticks at once dispatch a check once: the loser's write conflicts, it re-reads, and the claim it now
 * sees makes the check not due. A dispatch that fails gives its claim back.
 */
export async function runTick(
  deps: { kube: TickKube; dispatcher: Dispatcher; clock: Clock; log: Log },
  cfg: TickConfig,
): Promise<TickEntry[]> {
  const { kube, log } = deps;
  const timings = cfg.timings ?? DEFAULT_DUE_TIMINGS;
  const maxAttempts = cfg.maxAttempts ?? 4;
  const [checks, states, jobs, healthChecks] = await Promise.all([
    kube.listChecks(cfg.scope),
    kube.listStates(cfg.scope),
    deps.dispatcher.runsKhJobs && kube.listJobs ? kube.listJobs(cfg.scope) : [],
    deps.dispatcher.runsHealthChecks && kube.listHealthChecks ? kube.listHealthChecks(cfg.scope) : [],
  ]);
  const stateByKey = new Map(states.map((s) => [keyOf(s.metadata.namespace, s.metadata.name), s]));
  const entries: TickEntry[] = [];
  const sorted = [...checks].sort((a, b) =>
    keyOf(a.metadata.namespace, a.metadata.name).localeCompare(keyOf(b.metadata.namespace, b.metadata.name)),
  );
  for (const check of sorted) {
    const { namespace, name } = check.metadata;
    const ref = keyOf(namespace, name);
    const schedule = scheduleOf(check);
    const target: CheckRef = {
      namespace,
      name,
      timeoutMs: schedule.timeoutMs,
      runIntervalMs: schedule.runIntervalMs,
    };
    const decide = (state: KhState | null) =>
      decideDue({
        key: check.metadata.uid ?? ref,
        runIntervalMs: schedule.runIntervalMs,
        createdAtMs: Date.parse(check.metadata.creationTimestamp as unknown as string) || 0,
        state,
        nowMs: deps.clock.nowMs(),
        timings,
      });
    const listed = stateByKey.get(ref) ?? null;
    const refusal = kuberhealthyGuard({ namespace, name }, { takeOver: cfg.takeOver ?? false })?.(listed);
    if (refusal !== undefined) {
      // The runner would refuse it too (exit 2): sending it would only make a failed Job each interval.
      log.warn('refused: a Kuberhealthy runs it', { check: ref });
      entries.push({ check: ref, decision: decide(listed), result: 'refused', error: refusal });
      continue;
    }
    const first = decide(listed);
    if (!first.due) {
      entries.push({ check: ref, decision: first, result: 'not-due' });
      continue;
    }
    const claimed = await claimDispatch(deps, {
      namespace,
      name,
      target,
      listed,
      decide,
      maxAttempts,
      identity: cfg.identity,
    });
    if (claimed.kind === 'lost') {
      entries.push({
        check: ref,
        decision: claimed.decision,
        result: 'lost',
        ...(claimed.ref ? { ref: claimed.ref } : {}),
      });
      continue;
    }
    const decision = claimed.decision;
    try {
      await deps.dispatcher.dispatch(target, claimed.claim.ref);
      log.info('dispatched', { check: ref, ref: claimed.claim.ref, reason: decision.reason });
      entries.push({ check: ref, decision, result: 'dispatched', ref: claimed.claim.ref });
    } catch (error) {
      const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
      log.error('dispatch failed', { check: ref, ref: claimed.claim.ref, error: message });
      await releaseClaim(kube, namespace, name, claimed.claim).catch(() => undefined);
      entries.push({ check: ref, decision, result: 'failed', ref: claimed.claim.ref, error: message });
    }
  }
  const jobStates = {
    jobs,
    states: stateByKey,
    identity: cfg.identity,
    timings,
    maxAttempts,
    takeOver: cfg.takeOver,
  };
  entries.push(...(await dispatchDueJobs(deps, jobStates)));
  if (kube.healthChecks)
    entries.push(
      ...(await dispatchDueHealthChecks(
        { ...deps, api: kube.healthChecks },
        { healthChecks, identity: cfg.identity, timings, maxAttempts, takeOver: cfg.takeOver },
      )),
    );
  return entries;
}

type ClaimResult =
  | { kind: 'claimed'; claim: DispatchClaim; decision: DueDecision }
  | { kind: 'lost'; decision: DueDecision; ref?: string };

/**
 * Takes the dispatch claim with a compare-and-swap, starting from the listed khstate (no read before the
 * first write); after a conflict it re-reads, and the claim another tick wrote makes the check not due.
 */
async function claimDispatch(
  deps: { kube: TickKube; dispatcher: Dispatcher; clock: Clock; log: Log },
  c: {
    namespace: string;
    name: string;
    target: CheckRef;
    listed: KhState | null;
    decide: (state: KhState | null) => DueDecision;
    maxAttempts: number;
    identity: string;
  },
): Promise<ClaimResult> {
  try {
    return await updateKhStateWithRetry<ClaimResult>(deps.kube, c, {
      writer: 'dispatch',
      maxAttempts: c.maxAttempts,
      log: deps.log,
      initial: c.listed,
      decide: (state) => {
        const decision = c.decide(state);
        if (!decision.due) return done({ kind: 'lost', decision, ref: readDispatchClaim(state)?.ref });
        const nowMs = deps.clock.nowMs();
        const claim: DispatchClaim = {
          atMs: nowMs,
          ref: deps.dispatcher.refFor(c.target, nowMs),
          by: c.identity,
        };
        const base = state ?? newKhState(c.name, c.namespace);
        return write(withDispatchClaim(base, claim), () => ({ kind: 'claimed', claim, decision }));
      },
    });
  } catch (error) {
    if (!(error instanceof RetriesExhausted)) throw error;
    deps.log.warn('dispatch claim kept conflicting; left for the next tick', {
      check: `${c.namespace}/${c.name}`,
    });
    return { kind: 'lost', decision: c.decide(c.listed) };
  }
}
