import { Counter, Gauge, type Metric, Registry } from 'prom-client';
import { addHealthCheckSeries } from '../healthcheck/metrics.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { readConsecutiveFailures, readDispatchClaim } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import {
  DURATION_BUCKETS_SECONDS,
  durationCount,
  failureCount,
  type OutcomeTotals,
  readTotals,
} from '../state/totals.ts';
import { addAvailabilitySeries } from './availability-metrics.ts';
import { errorLabel, type MetricsOptions } from './error-label.ts';
import { addJobSeries } from './job-metrics.ts';
import { runDurationSeconds } from './run-duration.ts';
import { buildStatus, checkKey } from './status-json.ts';

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

export interface RenderMetricsInput {
  currentMaster: string;
  nowMs: number;
  namespaces?: readonly string[];
  options?: MetricsOptions;
  /** HealthChecks listed beside the khchecks, with v3's labels plus `kind` (healthcheck-metrics.ts). */
  healthChecks?: readonly HealthCheck[];
}

type CheckLabels = { check: string; namespace: string };

/**
 * A histogram whose buckets come from stored totals rather than from observe(): prom-client has no API to
 * set bucket counts, so this is a collector in its metric shape, and prom-client's registry still writes
 * the exposition text (names, escaping, number formatting).
 */
function storedHistogram(
  name: string,
  help: string,
  series: { labels: CheckLabels; totals: OutcomeTotals }[],
) {
  const values = series.flatMap(({ labels, totals }) => {
    let cumulative = 0;
    const buckets = DURATION_BUCKETS_SECONDS.map((bound) => {
      cumulative += totals.durationBuckets[String(bound)] ?? 0;
      return { metricName: `${name}_bucket`, labels: { ...labels, le: bound }, value: cumulative };
    });
    const count = durationCount(totals);
    return [
      ...buckets,
      { metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: count },
      { metricName: `${name}_sum`, labels, value: totals.durationSumSeconds },
      { metricName: `${name}_count`, labels, value: count },
    ];
  });
  const data = { name, help, type: 'histogram', aggregator: 'sum', values };
  return { ...data, get: async () => data, reset() {} } as unknown as Metric;
}

/**
 * The Prometheus text exposition of the checks that the status JSON lists: v2's metric names, labels and
 * help texts, then v3's per-check series and khrun's own, all derived from khstates (khrun keeps no
 * state of its own; counters come from the totals annotation and only grow).
 */
export async function renderMetrics(states: readonly KhState[], input: RenderMetricsInput): Promise<string> {
  const status = buildStatus(states, {
    namespaces: input.namespaces,
    currentMaster: input.currentMaster,
    healthChecks: input.healthChecks,
  });
  const byKey = new Map(states.map((s) => [checkKey(s), s]));
  const registry = new Registry();
  const registers = [registry];
  // `kind` is set on HealthCheck series only: khcheck series are written without it, as v2 writes them.
  const checkNames = ['check', 'namespace', 'kind'] as const;

  new Gauge({
    name: 'kuberhealthy_running',
    help: 'Shows if kuberhealthy is running error free',
    labelNames: ['current_master'],
    registers,
  }).set({ current_master: input.currentMaster }, 1);
  new Gauge({
    name: 'kuberhealthy_cluster_state',
    help: 'Shows the status of the cluster',
    registers,
  }).set(status.OK ? 1 : 0);
  const withError = !input.options?.suppressErrorLabel;
  const check = new Gauge({
    name: 'kuberhealthy_check',
    help: 'Shows the status of a Kuberhealthy check',
    labelNames: withError
      ? ['check', 'namespace', 'status', 'error', 'kind']
      : ['check', 'namespace', 'status', 'kind'],
    registers,
  });
  const duration = new Gauge({
    name: 'kuberhealthy_check_duration_seconds',
    help: 'Shows the check run duration of a Kuberhealthy check',
    labelNames: checkNames,
    registers,
  });
  const failures = new Gauge({
    name: 'kuberhealthy_check_consecutive_failures',
    help: 'Failed runs of the check since its last success',
    labelNames: checkNames,
    registers,
  });
  const sinceSuccess = new Gauge({
    name: 'kuberhealthy_check_seconds_since_success',
    help: 'Seconds since the last successful run of the check (absent until one is recorded)',
    labelNames: checkNames,
    registers,
  });
  const successes = new Counter({
    name: 'kuberhealthy_check_success_total',
    help: 'Successful runs of the check',
    labelNames: checkNames,
    registers,
  });
  const failuresTotal = new Counter({
    name: 'kuberhealthy_check_failure_total',
    help: 'Failed runs of the check (reported failures, timeouts and execution errors)',
    labelNames: checkNames,
    registers,
  });
  const outcomes = new Counter({
    name: 'kuberhealthy_check_outcomes_total',
    help: 'Recorded runs of the check by outcome (khrun)',
    labelNames: ['check', 'namespace', 'outcome', 'kind'],
    registers,
  });
  const lastRun = new Gauge({
    name: 'kuberhealthy_check_last_run_timestamp_seconds',
    help: 'When the check last recorded a result, as Unix time (khrun)',
    labelNames: checkNames,
    registers,
  });
  const interval = new Gauge({
    name: 'kuberhealthy_check_run_interval_seconds',
    help: "The check's runInterval when its last result was recorded (khrun)",
    labelNames: checkNames,
    registers,
  });
  const timeout = new Gauge({
    name: 'kuberhealthy_check_timeout_seconds',
    help: "The check's timeout when its last result was recorded; overdue after run interval plus timeout (khrun)",
    labelNames: checkNames,
    registers,
  });
  const lastDispatch = new Gauge({
    name: 'kuberhealthy_check_last_dispatch_timestamp_seconds',
    help: 'When the tick last sent the check to a runner, as Unix time (khrun; absent in sync mode)',
    labelNames: checkNames,
    registers,
  });
  const histogramSeries: { labels: CheckLabels; totals: OutcomeTotals }[] = [];

  for (const [key, details] of Object.entries(status.CheckDetails)) {
    const state = byKey.get(key) as KhState;
    const labels: CheckLabels = { check: key, namespace: details.Namespace };
    const ok = details.OK ? '1' : '0';
    check.set(
      withError
        ? { ...labels, status: ok, error: errorLabel(details.Errors, input.options) }
        : { ...labels, status: ok },
      details.OK ? 1 : 0,
    );
    duration.set(labels, runDurationSeconds(details.RunDuration));
    failures.set(labels, readConsecutiveFailures(state));
    const totals = readTotals(state);
    const lastRunMs = details.LastRun ? Date.parse(details.LastRun) : Number.NaN;
    // A khstate without totals (v2's, or an older khrun's) still tells when it last passed, if it passes now.
    const lastSuccessMs =
      totals.lastSuccessMs ?? (details.OK && Number.isFinite(lastRunMs) ? lastRunMs : undefined);
    if (lastSuccessMs !== undefined)
      sinceSuccess.set(labels, Math.max(0, (input.nowMs - lastSuccessMs) / 1000));
    successes.inc(labels, totals.succeeded);
    failuresTotal.inc(labels, failureCount(totals));
    for (const [outcome, n] of [
      ['Succeeded', totals.succeeded],
      ['Failed', totals.failed],
      ['TimedOut', totals.timedOut],
      ['ExecutionError', totals.executionError],
      ['Skipped', totals.skipped],
    ] as const) {
      outcomes.inc({ ...labels, outcome }, n);
    }
    if (Number.isFinite(lastRunMs)) lastRun.set(labels, lastRunMs / 1000);
    if (totals.runIntervalMs !== undefined) interval.set(labels, totals.runIntervalMs / 1000);
    if (totals.timeoutMs) timeout.set(labels, totals.timeoutMs / 1000);
    const dispatch = readDispatchClaim(state);
    if (dispatch) lastDispatch.set(labels, dispatch.atMs / 1000);
    histogramSeries.push({ labels, totals });
  }
  histogramSeries.push(
    ...addHealthCheckSeries(
      {
        check,
        duration,
        failures,
        sinceSuccess,
        successes,
        failuresTotal,
        outcomes,
        lastRun,
        interval,
        timeout,
        lastDispatch,
      },
      input.healthChecks ?? [],
      {
        namespaces: input.namespaces,
        nowMs: input.nowMs,
        withError,
        errorLabel: (errors) => errorLabel(errors, input.options),
      },
    ),
  );
  registry.registerMetric(
    storedHistogram(
      'kuberhealthy_check_run_duration_seconds',
      'Run durations of the check (skipped runs excluded)',
      histogramSeries,
    ),
  );
  addJobSeries(registry, status.JobDetails, input.options);
  addAvailabilitySeries(
    registry,
    Object.entries(status.CheckDetails).map(([key, d]) => ({
      key,
      namespace: d.Namespace,
      state: byKey.get(key) as KhState,
    })),
    input.healthChecks ?? [],
    { namespaces: input.namespaces, nowMs: input.nowMs },
  );
  return registry.metrics();
}
