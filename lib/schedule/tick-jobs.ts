import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { jobAsCheck, type KhJob } from '../job/khjob.ts';
import { done, RetriesExhausted, updateKhStateWithRetry, write } from '../kube/cas.ts';
import { type DispatchClaim, withDispatchClaim } from '../state/dispatch-claim.ts';
import { newKhState } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { DEFAULT_DUE_TIMINGS, type DueTimings } from './due.ts';
import { decideJobDue } from './due-jobs.ts';
import type { CheckRef } from './run-job.ts';
import { scheduleOf } from './schedule-of.ts';
import { type Dispatcher, releaseClaim, type TickEntry, type TickKube } from './tick.ts';

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

/**
 * The tick's part for khjobs: each new khjob (and each whose run a killed runner left) is dispatched as its
 * own runner invocation, `khrun run --job`, after the same dispatch claim as a khcheck's: a
 * compare-and-swap on its khstate, so of two ticks at once only one sends it, and a dispatch that fails
 * gives its claim back. Whether the khjob then runs once is the runner's to guarantee (lib/job). Entries
 * are listed under `khjob/namespace/name`; khjobs that already ran are not listed.
 */
export async function dispatchDueJobs(
  deps: { kube: TickKube; dispatcher: Dispatcher; clock: Clock; log: Log },
  c: {
    jobs: readonly KhJob[];
    states: ReadonlyMap<string, KhState>;
    identity: string;
    timings?: DueTimings;
    maxAttempts: number;
  },
): Promise<TickEntry[]> {
  const timings = c.timings ?? DEFAULT_DUE_TIMINGS;
  const entries: TickEntry[] = [];
  const sorted = [...c.jobs].sort((a, b) =>
    keyOf(a.metadata.namespace, a.metadata.name).localeCompare(keyOf(b.metadata.namespace, b.metadata.name)),
  );
  for (const job of sorted) {
    const { namespace, name } = job.metadata;
    const key = keyOf(namespace, name);
    const label = `khjob/${key}`;
    const decide = (state: KhState | null) => decideJobDue(job, state, deps.clock.nowMs(), timings);
    const listed = c.states.get(key) ?? null;
    const first = decide(listed);
    if (!first) continue;
    if (!first.due) {
      entries.push({ check: label, decision: first, result: 'not-due' });
      continue;
    }
    const target: CheckRef = {
      namespace,
      name,
      timeoutMs: scheduleOf(jobAsCheck(job)).timeoutMs,
      kind: 'khjob',
    };
    let claim: DispatchClaim | undefined;
    try {
      claim = await updateKhStateWithRetry<DispatchClaim | undefined>(deps.kube, job.metadata, {
        writer: 'dispatch',
        maxAttempts: c.maxAttempts,
        log: deps.log,
        initial: listed,
        decide: (state) => {
          if (!decide(state)?.due) return done(undefined);
          const nowMs = deps.clock.nowMs();
          const next: DispatchClaim = {
            atMs: nowMs,
            ref: deps.dispatcher.refFor(target, nowMs),
            by: c.identity,
          };
          return write(withDispatchClaim(state ?? newKhState(name, namespace), next), () => next);
        },
      });
    } catch (error) {
      if (!(error instanceof RetriesExhausted)) throw error;
    }
    if (!claim) {
      entries.push({ check: label, decision: first, result: 'lost' });
      continue;
    }
    try {
      await deps.dispatcher.dispatch(target, claim.ref);
      deps.log.info('dispatched', { khjob: key, ref: claim.ref, reason: first.reason });
      entries.push({ check: label, decision: first, result: 'dispatched', ref: claim.ref });
    } catch (error) {
      const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
      deps.log.error('dispatch failed', { khjob: key, ref: claim.ref, error: message });
      await releaseClaim(deps.kube, namespace, name, claim).catch(() => undefined);
      entries.push({ check: label, decision: first, result: 'failed', ref: claim.ref, error: message });
    }
  }
  return entries;
}
