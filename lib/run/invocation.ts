import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Log } from '../core/log.ts';
import { kubePort } from '../kube/kube-port.ts';
import { apiServerClock } from '../kube/server-clock.ts';
import { type RunningServer, startReportServer } from '../report/http-server.ts';
import { kubeCallerLookup } from '../report/kube-lookup.ts';
import {
  type ReportingUrl,
  type ReportKey,
  randomReportKey,
  signedReportUrl,
} from '../report/report-token.ts';
import { kuberhealthyGuard } from '../takeover/guard.ts';
import type { AcquireDeps } from './acquire.ts';
import type { RunTimings } from './assess.ts';
import { httpEndpointProbe } from './endpoint-probe.ts';
import { kubeEventSink } from './events.ts';
import { type IterationResult, runIteration } from './iteration.ts';

export type ReportHosting =
  /** key: the deployment's (KHRUN_REPORT_KEY), to sign each run's URL; without it pods get url as is. */
  | { kind: 'external'; url: string; key?: ReportKey }
  | { kind: 'hosted'; host: string; port: number; maxBodyBytes?: number };

export interface RunCheckOptions {
  kc: KubeConfig;
  namespace: string;
  checkName: string;
  runner: string;
  report: ReportHosting;
  signal: AbortSignal;
  log: Log;
  timings?: RunTimings;
  leaseMs?: number;
  keepFinishedPods?: number;
  onPhase?: (phase: string, extra?: Record<string, unknown>) => void;
  /**
   * Run even a check a Kuberhealthy runs (KHRUN_TAKE_OVER); else such a run is refused from the khstate the
   * claim reads (lib/takeover's guard), for `khrun run`, `khrun serve`'s triggered runs and the Lambda alike.
   */
  takeOver?: boolean;
  /** Changes the engine's ports before the iteration: a khjob runs through its own (lib/job/job-port.ts). */
  adapt?: (deps: AcquireDeps) => AcquireDeps;
}

/**
 * One invocation of the runner: hosts the report endpoint for the run's duration (unless an external one
 * is configured), performs the iteration, and stops everything it started.
 */
export async function runCheck(opts: RunCheckOptions): Promise<IterationResult> {
  // Decides by the API server's time: leases and deadlines are compared with times other machines wrote.
  const clock = apiServerClock(opts.kc, opts.log);
  const kube = kubePort(opts.kc);
  let server: RunningServer | undefined;
  try {
    let reportingUrl: ReportingUrl;
    if (opts.report.kind === 'external') {
      const { url, key } = opts.report;
      reportingUrl = key ? (run) => signedReportUrl(url, key, run) : url;
    } else {
      // The endpoint only this run's pods report to: a key of its own, and nothing but signed URLs.
      const key = randomReportKey();
      server = await startReportServer(
        {
          lookup: kubeCallerLookup(opts.kc, { namespaces: [opts.namespace] }),
          state: { read: kube.readState, replace: kube.replaceState },
          clock,
          log: opts.log,
          server: opts.runner,
        },
        {
          host: opts.report.host,
          port: opts.report.port,
          maxBodyBytes: opts.report.maxBodyBytes,
          access: { key, unsigned: 'refuse', scope: { namespaces: [opts.namespace] } },
        },
      );
      const base = server.url;
      reportingUrl = (run) => signedReportUrl(base, key, run);
    }
    const deps: AcquireDeps = {
      kube,
      clock,
      ids: { runUuid: randomUUID },
      log: opts.log,
      events: kubeEventSink(opts.kc),
      endpoints: httpEndpointProbe,
    };
    return await runIteration(opts.adapt ? opts.adapt(deps) : deps, {
      namespace: opts.namespace,
      checkName: opts.checkName,
      runner: opts.runner,
      holder: `${opts.runner}/${randomUUID()}`,
      hostsReports: opts.report.kind === 'hosted',
      reportingUrl,
      signal: opts.signal,
      timings: opts.timings,
      leaseMs: opts.leaseMs,
      keepFinishedPods: opts.keepFinishedPods,
      onPhase: opts.onPhase,
      refuse: kuberhealthyGuard(
        { namespace: opts.namespace, name: opts.checkName },
        { takeOver: opts.takeOver ?? false },
      ),
    });
  } finally {
    await server?.close();
  }
}
