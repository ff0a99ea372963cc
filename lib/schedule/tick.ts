import type { Clock } from '../core/clock.ts';
import type { IdSource } from '../core/ids.ts';
import type { Log } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { KhState } from '../state/resources.ts';
import { kuberhealthyGuard } from '../takeover/guard.ts';
import { DEFAULT_TICK_CONCURRENCY, type DueCheck, dispatchDue } from './dispatch-due.ts';
import type { Dispatcher } from './dispatcher.ts';
import { DEFAULT_DUE_TIMINGS, type DueTimings, decideDue } from './due.ts';
import type { CheckRef } from './run-job.ts';
import { scheduleOf } from './schedule-of.ts';
import type { TickEntry } from './tick-entry.ts';
import { dispatchDueHealthChecks } from './tick-healthchecks.ts';
import { dispatchDueJobs } from './tick-jobs.ts';
import type { TickKube } from './tick-port.ts';

export interface TickConfig {
  scope: NamespaceScope;
  /** Who dispatches (pod name, Lambda request id): written into the claim. */
  identity: string;
  timings?: DueTimings;
  maxAttempts?: number;
  /** Dispatch checks a Kuberhealthy runs too (KHRUN_TAKE_OVER); else they are skipped as 'refused'. */
  takeOver?: boolean;
  /** The most khchecks per runner invocation (KHRUN_BATCH_SIZE); default 1, an invocation per check. */
  batchSize?: number;
  /** The most claims and dispatches in flight (KHRUN_TICK_CONCURRENCY); default DEFAULT_TICK_CONCURRENCY. */
  concurrency?: number;
}

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

/**
 * One tick: finds the checks that are due and dispatches them, never running a check itself. One list of
 * each kind per tick; each due khcheck's dispatch claim is a compare-and-swap on its khstate starting from
 * the listed one, so two ticks at once dispatch a check once: the loser's write conflicts, it re-reads, and
 * the claim it now sees makes the check not due. Claims and sends run concurrently, bounded, in batches of
 * up to batchSize khchecks per invocation (dispatch-due.ts); a failed send gives its claims back. khjobs
 * and HealthChecks follow, one invocation each.
 */
export async function runTick(
  deps: { kube: TickKube; dispatcher: Dispatcher; clock: Clock; log: Log; ids?: IdSource },
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
  const sorted = [...checks].sort((a, b) =>
    keyOf(a.metadata.namespace, a.metadata.name).localeCompare(keyOf(b.metadata.namespace, b.metadata.name)),
  );
  // Decided from the lists, in order; the due ones are claimed and sent below, their entries put in place.
  const entries: Array<TickEntry | undefined> = [];
  const due: Array<DueCheck & { at: number }> = [];
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
    due.push({ label: ref, target, listed, decide, at: entries.length });
    entries.push(undefined);
  }
  const sent = await dispatchDue(deps, due, {
    identity: cfg.identity,
    maxAttempts,
    batchSize: cfg.batchSize ?? 1,
    concurrency: cfg.concurrency ?? DEFAULT_TICK_CONCURRENCY,
  });
  sent.forEach((entry, i) => {
    entries[due[i]!.at] = entry;
  });
  const jobStates = {
    jobs,
    states: stateByKey,
    identity: cfg.identity,
    timings,
    maxAttempts,
    takeOver: cfg.takeOver,
  };
  const jobEntries = await dispatchDueJobs(deps, jobStates);
  const healthCheckEntries = kube.healthChecks
    ? await dispatchDueHealthChecks(
        { ...deps, api: kube.healthChecks },
        { healthChecks, identity: cfg.identity, timings, maxAttempts, takeOver: cfg.takeOver },
      )
    : [];
  return [...entries.filter((e) => e !== undefined), ...jobEntries, ...healthCheckEntries];
}
