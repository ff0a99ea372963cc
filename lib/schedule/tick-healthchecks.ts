import type { HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf, timeoutMsOf } from '../healthcheck/state-view.ts';
import type { DueTimings } from './due.ts';
import { decideHealthCheckDue } from './due-healthchecks.ts';
import { healthCheckClaims } from './healthcheck-claims.ts';
import type { TickKind } from './tick-kind.ts';
import type { HealthCheckWrites } from './tick-port.ts';

/**
 * Kuberhealthy v3 HealthChecks in the tick: due as v3 decides it (decideHealthCheckDue), each its own
 * runner invocation, `khrun run --healthcheck` (HEALTHCHECK_NAME), after a dispatch claim in the
 * HealthCheck's own khrun.dev/dispatched annotation. The guard reads the HealthCheck's khstate view; a
 * HealthCheck gone since it was listed is not due.
 */
export function healthCheckTicks(p: {
  api: HealthCheckWrites;
  timings: DueTimings;
}): TickKind<HealthCheck, HealthCheck> {
  return {
    kind: 'healthcheck',
    batches: false,
    objects: (lists) => lists.healthChecks,
    target: (hc) => ({ kind: 'healthcheck', namespace: hc.metadata.namespace, name: hc.metadata.name }),
    listed: (hc) => hc,
    decide: (_hc, current, nowMs) => (current ? decideHealthCheckDue(current, nowMs, p.timings) : undefined),
    guardView: (listed) => (listed ? stateViewOf(listed) : null),
    send: (hc) => ({
      kind: 'healthcheck',
      namespace: hc.metadata.namespace,
      name: hc.metadata.name,
      timeoutMs: timeoutMsOf(hc),
    }),
    claims: (target) => healthCheckClaims(p.api, target),
  };
}
