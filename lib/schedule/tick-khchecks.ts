import type { KhStateStore } from '../kube/cas.ts';
import type { KhCheck, KhState } from '../state/resources.ts';
import { type DueTimings, decideDue } from './due.ts';
import { khStateClaims } from './khstate-claims.ts';
import { type CheckSchedule, scheduleOf } from './schedule-of.ts';
import type { TickKind } from './tick-kind.ts';

/** A khcheck with the interval and timeout it is scheduled with, worked out once per tick. */
type ScheduledCheck = { check: KhCheck; schedule: CheckSchedule };

const keyOf = (m: { namespace: string; name: string }) => `${m.namespace}/${m.name}`;

/**
 * khchecks in the tick: due by decideDue on their khstate, which also holds their dispatch claim; the
 * only kind whose due objects share runner invocations (batches). An invalid khcheck is still scheduled,
 * at v2's defaults, so its runner records why.
 */
export function khcheckTicks(p: {
  checks: readonly KhCheck[];
  store: KhStateStore;
  timings: DueTimings;
}): TickKind<ScheduledCheck, KhState> {
  return {
    kind: 'khcheck',
    batches: true,
    objects: p.checks.map((check) => ({ check, schedule: scheduleOf(check) })),
    annotations: (item) => item.check.metadata.annotations,
    target: ({ check }) => ({
      kind: 'khcheck',
      namespace: check.metadata.namespace,
      name: check.metadata.name,
    }),
    listed: ({ check }, states) => states.get(keyOf(check.metadata)) ?? null,
    decide: ({ check, schedule }, state, nowMs) =>
      decideDue({
        key: check.metadata.uid ?? keyOf(check.metadata),
        runIntervalMs: schedule.runIntervalMs,
        createdAtMs: Date.parse(check.metadata.creationTimestamp as unknown as string) || 0,
        state,
        nowMs,
        timings: p.timings,
      }),
    guardView: (listed) => listed,
    send: ({ check, schedule }) => ({
      kind: 'khcheck',
      namespace: check.metadata.namespace,
      name: check.metadata.name,
      timeoutMs: schedule.timeoutMs,
      runIntervalMs: schedule.runIntervalMs,
    }),
    claims: (target) => khStateClaims(p.store, target),
  };
}
