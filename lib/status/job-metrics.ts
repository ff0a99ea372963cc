import { Gauge, type Registry } from 'prom-client';
import { errorLabel, type MetricsOptions } from './error-label.ts';
import { runDurationSeconds } from './run-duration.ts';
import type { V2WorkloadDetails } from './status-json.ts';

/**
 * v2.7.1's two khjob series (pkg/metrics GenerateMetrics): `kuberhealthy_job{check, namespace, status,
 * error}` (1 when the job's run passed) and `kuberhealthy_job_duration_seconds{check, namespace}`, one pair
 * per entry of the status JSON's JobDetails, with v2's help texts. The error label is written as khrun's
 * kuberhealthy_check writes it (errors joined by `|`); v2.7.1 ends it with a stray `|`.
 */
export function addJobSeries(
  registry: Registry,
  jobs: Readonly<Record<string, V2WorkloadDetails>>,
  options: MetricsOptions = {},
): void {
  const registers = [registry];
  const withError = !options.suppressErrorLabel;
  const job = new Gauge({
    name: 'kuberhealthy_job',
    help: 'Shows the status of a Kuberhealthy job',
    labelNames: withError ? ['check', 'namespace', 'status', 'error'] : ['check', 'namespace', 'status'],
    registers,
  });
  const duration = new Gauge({
    name: 'kuberhealthy_job_duration_seconds',
    help: 'Shows the job run duration of a Kuberhealthy job',
    labelNames: ['check', 'namespace'],
    registers,
  });
  for (const [key, details] of Object.entries(jobs)) {
    const labels = { check: key, namespace: details.Namespace };
    const status = details.OK ? '1' : '0';
    job.set(
      withError ? { ...labels, status, error: errorLabel(details.Errors, options) } : { ...labels, status },
      details.OK ? 1 : 0,
    );
    duration.set(labels, runDurationSeconds(details.RunDuration));
  }
}
