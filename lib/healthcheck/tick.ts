import type { DueTimings } from '../schedule/due.ts';
import type { TickKind } from '../schedule/tick-kind.ts';
import type { HealthCheckWrites } from './dispatch-claims.ts';
import { healthCheckClaims } from './dispatch-claims.ts';
import { decideHealthCheckDue } from './due.ts';
import type { HealthCheck } from './resources.ts';
import { stateViewOf, timeoutMsOf } from './state-view.ts';

/**
 * Kuberhealthy v3 HealthChecks in the tick: due as v3 decides it (decideHealthCheckDue), each its own
 * runner invocation, `khrun run --healthcheck` (HEALTHCHECK_NAME), after a dispatch claim in the
 * HealthCheck's own khrun.dev/dispatched annotation. The guard reads the HealthCheck's khstate view; a
 * HealthCheck gone since it was listed is not due.
 */
export function healthCheckTicks(p: {
  healthChecks: readonly HealthCheck[];
  api: HealthCheckWrites;
  timings: DueTimings;
}): TickKind<HealthCheck, HealthCheck> {
  return {
    kind: 'healthcheck',
    batches: false,
    objects: p.healthChecks,
    annotations: (hc) => hc.metadata.annotations,
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
