import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf, timeoutMsOf } from '../healthcheck/state-view.ts';
import { done, RetriesExhausted, updateWithRetry, write } from '../kube/cas.ts';
import { ANNOTATION, type DispatchClaim, readDispatchClaim } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { kuberhealthyGuard } from '../takeover/guard.ts';
import type { Dispatcher } from './dispatcher.ts';
import { DEFAULT_DUE_TIMINGS, type DueTimings } from './due.ts';
import { decideHealthCheckDue } from './due-healthchecks.ts';
import type { CheckRef } from './run-job.ts';
import type { TickEntry } from './tick-entry.ts';

/**
 * The HealthCheck requests the tick makes: read one, and replace it (its annotations; never its status,
 * which is v3's result and the runner's to write) with metadata.resourceVersion as precondition,
 * WriteConflict on 409. lib/healthcheck's HealthCheckApi has both.
 */
export interface HealthCheckWrites {
  get(namespace: string, name: string): Promise<HealthCheck | null>;
  replace(hc: HealthCheck, writer?: string): Promise<HealthCheck>;
}

const keyOf = (hc: HealthCheck) => `${hc.metadata.namespace}/${hc.metadata.name}`;
const asState = (hc: HealthCheck) => ({ metadata: hc.metadata }) as KhState;

/** The HealthCheck with the dispatch claim in its khrun.dev/dispatched annotation (or without it). Pure. */
export function withHealthCheckDispatch(hc: HealthCheck, claim: DispatchClaim | undefined): HealthCheck {
  const annotations = { ...hc.metadata.annotations };
  if (claim) annotations[ANNOTATION.dispatch] = JSON.stringify(claim);
  else delete annotations[ANNOTATION.dispatch];
  return { ...hc, metadata: { ...hc.metadata, annotations } };
}

/**
 * The tick's part for Kuberhealthy v3 HealthChecks: each due one (decideHealthCheckDue: v3's rule) is
 * dispatched as its own runner invocation, `khrun run --healthcheck` (HEALTHCHECK_NAME), after the same
 * dispatch claim as a khcheck's, here an annotation on the HealthCheck written with a compare-and-swap
 * (starting from the listed HealthCheck; after a conflict it reads it again and decides again), so of two
 * ticks at once only one sends it. A dispatch that fails gives its claim back. Entries are listed under
 * `healthcheck/namespace/name`.
 */
export async function dispatchDueHealthChecks(
  deps: { api: HealthCheckWrites; dispatcher: Dispatcher; clock: Clock; log: Log },
  c: {
    healthChecks: readonly HealthCheck[];
    identity: string;
    timings?: DueTimings;
    maxAttempts: number;
    takeOver?: boolean;
  },
): Promise<TickEntry[]> {
  const timings = c.timings ?? DEFAULT_DUE_TIMINGS;
  const entries: TickEntry[] = [];
  for (const hc of [...c.healthChecks].sort((a, b) => keyOf(a).localeCompare(keyOf(b)))) {
    const { namespace, name } = hc.metadata;
    const label = `healthcheck/${keyOf(hc)}`;
    const first = decideHealthCheckDue(hc, deps.clock.nowMs(), timings);
    const refusal = kuberhealthyGuard(
      { namespace, name },
      { takeOver: c.takeOver ?? false },
    )?.(stateViewOf(hc));
    if (refusal !== undefined) {
      // As for a khcheck (tick.ts): its runner would refuse it, exit 2, so nothing is sent.
      deps.log.warn('refused: a Kuberhealthy runs it', { check: label });
      entries.push({ check: label, decision: first, result: 'refused', error: refusal });
      continue;
    }
    if (!first.due) {
      entries.push({ check: label, decision: first, result: 'not-due' });
      continue;
    }
    const target: CheckRef = { namespace, name, timeoutMs: timeoutMsOf(hc), kind: 'healthcheck' };
    const claim = await updateWithRetry<HealthCheck, DispatchClaim | undefined>({
      writer: 'dispatch',
      target: keyOf(hc),
      maxAttempts: c.maxAttempts,
      log: deps.log,
      initial: hc,
      read: () => deps.api.get(namespace, name),
      decide: (current) => {
        if (!current || !decideHealthCheckDue(current, deps.clock.nowMs(), timings).due)
          return done(undefined);
        const nowMs = deps.clock.nowMs();
        const next = { atMs: nowMs, ref: deps.dispatcher.refFor(target, nowMs), by: c.identity };
        return write(withHealthCheckDispatch(current, next), () => next);
      },
      persist: (next) => deps.api.replace(next, 'dispatch'),
    }).catch((error: unknown) => {
      if (error instanceof RetriesExhausted) return undefined;
      throw error;
    });
    if (!claim) {
      entries.push({ check: label, decision: first, result: 'lost' });
      continue;
    }
    try {
      await deps.dispatcher.dispatch(target, claim.ref);
      deps.log.info('dispatched', { check: label, ref: claim.ref, reason: first.reason });
      entries.push({ check: label, decision: first, result: 'dispatched', ref: claim.ref });
    } catch (error) {
      const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
      deps.log.error('dispatch failed', { check: label, ref: claim.ref, error: message });
      await releaseHealthCheckClaim(deps.api, hc, claim).catch(() => undefined);
      entries.push({ check: label, decision: first, result: 'failed', ref: claim.ref, error: message });
    }
  }
  return entries;
}

/** Gives a claim back, only if it is still ours (another tick may have claimed since). Best effort. */
async function releaseHealthCheckClaim(api: HealthCheckWrites, hc: HealthCheck, claim: DispatchClaim) {
  const { namespace, name } = hc.metadata;
  await updateWithRetry<HealthCheck, void>({
    writer: 'dispatch-release',
    target: keyOf(hc),
    maxAttempts: 3,
    read: () => api.get(namespace, name),
    decide: (current) => {
      const held = current && readDispatchClaim(asState(current));
      if (!current || held?.ref !== claim.ref || held.atMs !== claim.atMs) return done(undefined);
      return write(withHealthCheckDispatch(current, undefined), () => undefined);
    },
    persist: (next) => api.replace(next, 'dispatch-release'),
  });
}
