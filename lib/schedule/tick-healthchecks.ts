import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf, timeoutMsOf } from '../healthcheck/state-view.ts';
import type { KhStateStore } from '../kube/cas.ts';
import type { KhState } from '../state/resources.ts';
import { claimAndDispatch } from './dispatch-one.ts';
import { DEFAULT_DUE_TIMINGS, type DueTimings } from './due.ts';
import { decideHealthCheckDue } from './due-healthchecks.ts';
import type { Dispatcher, TickEntry } from './tick.ts';

/** The HealthChecks' state views (lib/healthcheck's port), and the HealthCheck itself to decide again. */
export interface HealthCheckStore extends KhStateStore {
  readHealthCheck(namespace: string, name: string): Promise<HealthCheck | null>;
}

const keyOf = (hc: HealthCheck) => `${hc.metadata.namespace}/${hc.metadata.name}`;

/**
 * The tick's part for Kuberhealthy v3 HealthChecks: each due one (decideHealthCheckDue, v3's rule) is
 * dispatched as its own runner invocation, `khrun run --healthcheck`, after the same dispatch claim as a
 * khcheck's, written in the HealthCheck's khrun.dev/dispatched annotation through its state view (store:
 * lib/healthcheck's port), so of two ticks at once only one sends it. Entries are listed under
 * `healthcheck/namespace/name`.
 */
export async function dispatchDueHealthChecks(
  deps: { store: HealthCheckStore; dispatcher: Dispatcher; clock: Clock; log: Log },
  c: {
    healthChecks: readonly HealthCheck[];
    identity: string;
    timings?: DueTimings;
    maxAttempts: number;
  },
): Promise<TickEntry[]> {
  const timings = c.timings ?? DEFAULT_DUE_TIMINGS;
  const entries: TickEntry[] = [];
  for (const hc of [...c.healthChecks].sort((a, b) => keyOf(a).localeCompare(keyOf(b)))) {
    const { namespace, name } = hc.metadata;
    const label = `healthcheck/${keyOf(hc)}`;
    const first = decideHealthCheckDue(hc, deps.clock.nowMs(), timings);
    if (!first.due) {
      entries.push({ check: label, decision: first, result: 'not-due' });
      continue;
    }
    const listed = stateViewOf(hc);
    // The listed HealthCheck first; after a conflict the HealthCheck read again, under the same rule.
    const decide = async (view: KhState | null) => {
      const current = view === listed ? hc : await deps.store.readHealthCheck(namespace, name);
      return current ? decideHealthCheckDue(current, deps.clock.nowMs(), timings) : undefined;
    };
    const target = { namespace, name, timeoutMs: timeoutMsOf(hc), kind: 'healthcheck' as const };
    entries.push(
      await claimAndDispatch(
        { store: deps.store, dispatcher: deps.dispatcher, clock: deps.clock, log: deps.log },
        { target, label, first, listed, decide, identity: c.identity, maxAttempts: c.maxAttempts },
      ),
    );
  }
  return entries;
}
