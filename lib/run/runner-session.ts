import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { type KubeClient, runnerClient } from '../kube/kube-client.ts';
import { kubePort } from '../kube/kube-port.ts';
import type { KubePort } from '../kube/port.ts';
import { type RunningServer, startReportServer } from '../report/http-server.ts';
import { kubeCallerLookup } from '../report/kube-lookup.ts';
import {
  type ReportingUrl,
  type ReportKey,
  randomReportKey,
  signedReportUrl,
} from '../report/report-token.ts';
import { kuberhealthyGuard } from '../takeover/guard.ts';
import type { AcquireDeps } from './acquire-deps.ts';
import type { RunTimings } from './assess.ts';
import { endpointProbeFor } from './endpoint-probe.ts';
import { kubeEventSink } from './events.ts';
import { type IterationResult, runIteration } from './iteration.ts';
import { reportInbox } from './report-inbox.ts';

export type ReportHosting =
  /** key: the deployment's (KHRUN_REPORT_KEY), to sign each run's URL; without it pods get url as is. */
  | { kind: 'external'; url: string; key?: ReportKey }
  | { kind: 'hosted'; host: string; port: number; maxBodyBytes?: number };

export interface RunnerSessionOptions {
  kc: KubeConfig;
  /**
   * The client object the session sends through (its bound, clock and keep-alive agent). Default: one of
   * its own on kc, bounded at RUNNER_REQUESTS_IN_FLIGHT (kube-client.ts, runnerClient). Handed in to share
   * one bound and clock between sessions (serve's triggered runs, a khjob's run and its own ports).
   */
  client?: KubeClient;
  /** Every namespace a check of this session lives in: the hosted endpoint serves exactly these. */
  namespaces: string[];
  runner: string;
  report: ReportHosting;
  log: Log;
  leaseMs?: number;
  keepFinishedPods?: number;
  /** Run even checks a Kuberhealthy runs (KHRUN_TAKE_OVER); else such a run is refused (lib/takeover). */
  takeOver?: boolean;
}

/** What opening a session takes besides its namespaces: what `khrun run`, a batch and the Lambda share. */
export type SessionSettings = Omit<RunnerSessionOptions, 'namespaces'>;

/** The session settings out of a wider options object (an invocation's, a command's), nothing else. */
export function sessionSettings(o: SessionSettings): SessionSettings {
  const { kc, client, runner, report, log, leaseMs, keepFinishedPods, takeOver } = o;
  return { kc, client, runner, report, log, leaseMs, keepFinishedPods, takeOver };
}

/** One check's iteration inside a session. */
export interface SessionRun {
  namespace: string;
  checkName: string;
  /** Cancels this run's wait (the invocation's signal, or one of its own): the run stays resumable. */
  signal: AbortSignal;
  timings?: RunTimings;
  onPhase?: (phase: string, extra?: Record<string, unknown>) => void;
  /** Changes the engine's ports before the iteration: a khjob runs through its own (lib/job/job-port.ts). */
  adapt?: (deps: AcquireDeps) => AcquireDeps;
  /** Writes this run's log lines through (for instance a child logger naming the check). */
  log?: Log;
}

/**
 * What one runner process shares between the checks it drives: one API client (and its clock, fed by every
 * response), one report endpoint, one event sink. `khrun run --check` opens a session for one check; a
 * batch runner for many, each run a full iteration of its own.
 */
export interface RunnerSession {
  readonly kube: KubePort;
  readonly clock: Clock;
  run(check: SessionRun): Promise<IterationResult>;
  /** Stops the endpoint; call once every run has returned. */
  close(): Promise<void>;
}

/**
 * Opens a session: starts the report endpoint this process hosts (a key of its own, nothing but signed URLs,
 * only the session's namespaces), unless an external one is configured. A report it receives for a run
 * this session waits on is handed to that run (report-inbox.ts, by run UUID, across concurrent runs) and
 * recorded as its outcome in one write; any other is stored in its khstate, as an external endpoint does.
 */
export async function openRunnerSession(opts: RunnerSessionOptions): Promise<RunnerSession> {
  // The checks of a session take turns at the API server: RUNNER_REQUESTS_IN_FLIGHT at a time, watches aside.
  const client = opts.client ?? runnerClient(opts.kc, opts.log);
  // Decides by the API server's time: leases and deadlines are compared with times other machines wrote.
  const { clock } = client;
  const kube = kubePort(client);
  const namespaces = [...new Set(opts.namespaces)];
  let server: RunningServer | undefined;
  let reportingUrl: ReportingUrl;
  // Reports to the endpoint hosted here, for runs waited for here, become their outcome in one write.
  const inbox = opts.report.kind === 'hosted' ? reportInbox() : undefined;
  if (opts.report.kind === 'external') {
    const { url, key } = opts.report;
    reportingUrl = key ? (run) => signedReportUrl(url, key, run) : url;
  } else {
    const key = randomReportKey();
    server = await startReportServer(
      {
        lookup: kubeCallerLookup(client, { namespaces }),
        state: { read: kube.readState, replace: kube.replaceState },
        clock,
        log: opts.log,
        server: opts.runner,
        deliver: inbox?.deliver,
      },
      {
        host: opts.report.host,
        port: opts.report.port,
        maxBodyBytes: opts.report.maxBodyBytes,
        access: { key, unsigned: 'refuse', scope: { namespaces } },
      },
    );
    const base = server.url;
    reportingUrl = (run) => signedReportUrl(base, key, run);
  }
  const events = kubeEventSink(client);
  const hostsReports = opts.report.kind === 'hosted';
  const probe = endpointProbeFor(opts.report);
  return {
    kube,
    clock,
    run(check) {
      const log = check.log ?? opts.log;
      const deps: AcquireDeps = {
        kube,
        clock,
        ids: { runUuid: randomUUID },
        log,
        events,
        endpoints: probe,
      };
      return runIteration(check.adapt ? check.adapt(deps) : deps, {
        namespace: check.namespace,
        checkName: check.checkName,
        runner: opts.runner,
        holder: `${opts.runner}/${randomUUID()}`,
        hostsReports,
        reportingUrl,
        inbox,
        signal: check.signal,
        timings: check.timings,
        leaseMs: opts.leaseMs,
        keepFinishedPods: opts.keepFinishedPods,
        onPhase: check.onPhase,
        refuse: kuberhealthyGuard(
          { namespace: check.namespace, name: check.checkName },
          { takeOver: opts.takeOver ?? false },
        ),
      });
    },
    close: async () => {
      await server?.close();
    },
  };
}
