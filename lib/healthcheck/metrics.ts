import type { Counter, Gauge } from 'prom-client';
import { readConsecutiveFailures, readDispatchClaim } from '../state/khstate.ts';
import { type OutcomeTotals, readTotals } from '../state/totals.ts';
import type { HealthCheck } from './resources.ts';
import { stateViewOf } from './state-view.ts';
import { listedHealthChecks } from './status-json.ts';
import { readHealthCheckStatus } from './status-view.ts';

/**
 * The label every HealthCheck series carries and no khcheck series does: khcheck series keep v2's labels
 * exactly (`check="<namespace>/<name>"`), HealthCheck series take v3's (`check="<name>"`, `namespace`) plus
 * `kind="HealthCheck"`, so a v3 dashboard's `check`/`namespace` selectors match and the two kinds of a
 * same-named check never fold into one series.
 */
export const HEALTHCHECK_KIND_LABEL = { kind: 'HealthCheck' } as const;

type Labels = { check: string; namespace: string; kind: string };

/** The families renderMetrics writes, as far as HealthChecks have a value for them. */
export interface HealthCheckFamilies {
  check: Gauge<string>;
  duration: Gauge<string>;
  failures: Gauge<string>;
  sinceSuccess: Gauge<string>;
  successes: Counter<string>;
  failuresTotal: Counter<string>;
  outcomes: Counter<string>;
  lastRun: Gauge<string>;
  interval: Gauge<string>;
  timeout: Gauge<string>;
  lastDispatch: Gauge<string>;
}

/**
 * Adds the series of the listed HealthChecks (the same ones the status JSON lists). Values come from v3's
 * status fields where v3 keeps them (ok, errors, runDuration, successCount, failureCount, lastOKUnix,
 * lastRunUnix), so a HealthCheck v3 ran shows the same numbers; consecutive failures and the per-outcome
 * totals from khrun's annotations on the HealthCheck (v3 has no field that survives its CRD). Returns the
 * histogram input (khrun's stored duration buckets).
 */
export function addHealthCheckSeries(
  families: HealthCheckFamilies,
  hcs: readonly HealthCheck[],
  opts: {
    namespaces?: readonly string[];
    nowMs: number;
    withError: boolean;
    errorLabel: (e: string[]) => string;
  },
): Array<{ labels: Labels; totals: OutcomeTotals }> {
  const histogram: Array<{ labels: Labels; totals: OutcomeTotals }> = [];
  for (const { hc, detail } of listedHealthChecks(hcs, opts.namespaces)) {
    const s = readHealthCheckStatus(hc);
    const labels: Labels = {
      check: hc.metadata.name,
      namespace: hc.metadata.namespace,
      ...HEALTHCHECK_KIND_LABEL,
    };
    const ok = detail.ok ? '1' : '0';
    families.check.set(
      opts.withError
        ? { ...labels, status: ok, error: opts.errorLabel(s.errors) }
        : { ...labels, status: ok },
      detail.ok ? 1 : 0,
    );
    families.duration.set(labels, s.runDuration / 1e9);
    const view = stateViewOf(hc);
    families.failures.set(labels, readConsecutiveFailures(view));
    if (s.lastOKUnix > 0) families.sinceSuccess.set(labels, Math.max(0, opts.nowMs / 1000 - s.lastOKUnix));
    families.successes.inc(labels, s.successCount);
    families.failuresTotal.inc(labels, s.failureCount);
    const totals = readTotals(view);
    for (const [outcome, n] of [
      ['Succeeded', totals.succeeded],
      ['Failed', totals.failed],
      ['TimedOut', totals.timedOut],
      ['ExecutionError', totals.executionError],
      ['Skipped', totals.skipped],
    ] as const) {
      families.outcomes.inc({ ...labels, outcome }, n);
    }
    if (s.lastRunUnix > 0) families.lastRun.set(labels, s.lastRunUnix);
    if (detail.runIntervalSeconds) families.interval.set(labels, detail.runIntervalSeconds);
    if (detail.timeoutSeconds) families.timeout.set(labels, detail.timeoutSeconds);
    // The tick's dispatch claim is a khrun.dev annotation on the HealthCheck itself (lib/schedule).
    const dispatch = readDispatchClaim(view);
    if (dispatch) families.lastDispatch.set(labels, dispatch.atMs / 1000);
    histogram.push({ labels, totals });
  }
  return histogram;
}
