import { Gauge, type Registry } from 'prom-client';
import { HEALTHCHECK_KIND_LABEL } from '../healthcheck/metrics.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf } from '../healthcheck/state-view.ts';
import { listedHealthChecks } from '../healthcheck/status-json.ts';
import type { KhState } from '../state/resources.ts';
import { availability, readUptime, UPTIME_WINDOWS } from '../state/uptime.ts';

export const AVAILABILITY_METRIC = 'kuberhealthy_check_availability_ratio';

/**
 * khrun's availability series: per check and window (24h, 7d, 30d), the share of OK results from the
 * uptime buckets kept with its state (state/uptime.ts); none for a window without results. Labelled as
 * the other per-check series (`check` as v2 writes it, `kind` on HealthChecks only).
 */
export function addAvailabilitySeries(
  registry: Registry,
  checks: ReadonlyArray<{ key: string; namespace: string; state: KhState }>,
  healthChecks: readonly HealthCheck[],
  opts: { namespaces?: readonly string[]; nowMs: number },
): void {
  const gauge = new Gauge({
    name: AVAILABILITY_METRIC,
    help: 'Share of OK results of the check in the window: 24h (hourly buckets), 7d and 30d (UTC days) (khrun)',
    labelNames: ['check', 'namespace', 'window', 'kind'],
    registers: [registry],
  });
  const add = (labels: Record<string, string>, uptime: ReturnType<typeof readUptime>) => {
    for (const window of UPTIME_WINDOWS) {
      const ratio = availability(uptime, window, opts.nowMs);
      if (ratio !== null) gauge.set({ ...labels, window }, ratio);
    }
  };
  for (const c of checks) add({ check: c.key, namespace: c.namespace }, readUptime(c.state));
  for (const { hc } of listedHealthChecks(healthChecks, opts.namespaces))
    add(
      { check: hc.metadata.name, namespace: hc.metadata.namespace, ...HEALTHCHECK_KIND_LABEL },
      readUptime(stateViewOf(hc)),
    );
}
