import { randomUUID } from 'node:crypto';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import type { KindName } from '../core/run-target.ts';
import type { KindPorts, RunResult, SessionKit, TargetRun } from '../kinds/kind.ts';
import { KINDS, kindOf } from '../kinds/registry.ts';
import { type KubeClient, runnerClient } from '../kube/kube-client.ts';
import { kubeListWatchTransport } from '../kube/list-watch-transport.ts';
import type { KubePort } from '../kube/port.ts';
import { sharedReads } from '../kube/shared-reads.ts';
import type { NotifyConfig } from '../notify/config.ts';
import { fetchSender } from '../notify/http.ts';
import { kubeNamespaceDefaults } from '../notify/namespace-defaults.ts';
import { createNotifier } from '../notify/notifier.ts';
import { type RunNotifier, runNotifier } from '../notify/run-notifier.ts';
import { DEFAULT_MAX_BODY_BYTES, type RunningServer, startReportServer } from '../report/http-server.ts';
import { kubeCallerLookup } from '../report/kube-lookup.ts';
import type { ReportHosting } from '../report/report-hosting.ts';
import { type ReportingUrl, type ReportKey, randomReportKey } from '../report/report-token.ts';
import { chainRoutes } from '../report/routes.ts';
import type { AcquireDeps } from '../run/acquire-deps.ts';
import { endpointProbeFor } from '../run/endpoint-probe.ts';
import { runIteration } from '../run/iteration.ts';
import { reportInbox } from '../run/report-inbox.ts';
import { kuberhealthyGuard } from '../takeover/guard.ts';
import { kubeParentStates } from './parent-states.ts';

/**
 * The settings configuration gives every run, whatever its kind and front end (`khrun run`, a batch, serve's
 * trigger, the runCheck Lambda): a new per-run setting is added here, parsed in lib/config's runnerSettings,
 * and used below; the option types between them extend this one.
 */
export interface RunSettings {
  /** The lease a runner holds on its run (KHRUN_LEASE_SECONDS; default ITERATION_DEFAULTS.leaseMs). */
  leaseMs?: number;
  /** Finished checker pods kept per check (KHRUN_KEEP_FINISHED_PODS; default ITERATION_DEFAULTS). */
  keepFinishedPods?: number;
  /** The notification configuration (KHRUN_NOTIFY_CONFIG...: lib/config/notify-options.ts); none: no notifications. */
  notify?: NotifyConfig;
}

/** The run settings of a wider object (a trigger's options, an invocation's), as their type names them. */
export function runSettings(o: RunSettings): RunSettings {
  return { leaseMs: o.leaseMs, keepFinishedPods: o.keepFinishedPods, notify: o.notify };
}

/** What a session is opened with: the run settings, and who runs, where pods report, which client. */
export interface SessionSettings extends RunSettings {
  kc: KubeConfig;
  /**
   * The client object the session sends through (its bound, clock and keep-alive agent). Default: one of
   * its own on kc, bounded at RUNNER_REQUESTS_IN_FLIGHT (kube-client.ts, runnerClient). Handed in to share
   * one bound and clock between sessions (serve's triggered runs, a warm Lambda's invocations).
   */
  client?: KubeClient;
  /** Who runs: becomes the runs' AuthoritativePod. */
  runner: string;
  report: ReportHosting;
  log: Log;
  /** Run even objects a Kuberhealthy runs (KHRUN_TAKE_OVER); else such a run is refused (lib/takeover). */
  takeOver?: boolean;
}

export interface SessionOptions extends SessionSettings {
  /** Every namespace an object of this session lives in: the hosted endpoint serves exactly these. */
  namespaces: readonly string[];
  /**
   * A batch's checks per namespace: its khcheck runs read their khstates and checker pods together there
   * (kube/shared-reads.ts), until the session closes. Absent: each run reads its own.
   */
  sharedReadsFor?: ReadonlyMap<string, number>;
}

/**
 * What one runner process shares between the objects it runs, of every kind: one client object (its clock,
 * fed by every response, its request bound and keep-alive agent), one report endpoint with v2's route and
 * each kind's own (v3's /check), one report inbox. Each run is a full iteration of its own.
 */
export interface Session {
  readonly client: KubeClient;
  /** The khcheck kind's port (khstates, pods) on the session's client. */
  readonly kube: KubePort;
  readonly clock: Clock;
  run(run: TargetRun): Promise<RunResult>;
  /** Stops the endpoint; call once every run has returned. */
  close(): Promise<void>;
}

/**
 * Opens a session: starts the report endpoint this process hosts (a key of its own, nothing but signed URLs,
 * only the session's namespaces), unless an external one is configured. A report it receives for a run this
 * session waits on is handed to that run (report-inbox.ts, by run UUID, across concurrent runs and kinds)
 * and recorded as its outcome in one write; any other is stored in its object's state, as an external
 * endpoint does.
 */
export async function openSession(opts: SessionOptions): Promise<Session> {
  const client = opts.client ?? runnerClient(opts.kc, opts.log);
  // Decides by the API server's time: leases and deadlines are compared with times other machines wrote.
  const { clock } = client;
  const sharing = new AbortController();
  const shared =
    opts.sharedReadsFor &&
    sharedReads({
      transport: kubeListWatchTransport<KubernetesObject>(client),
      checksPerNamespace: opts.sharedReadsFor,
      monoMs: () => clock.monoMs(),
      signal: sharing.signal,
      onNotice: (message, fields) => opts.log.info(message, fields),
    });
  // Each kind's ports are made once (no request is sent until a run or a report needs one).
  const portsByKind = new Map<KindName, KindPorts>(
    Object.values(KINDS).map((k) => [k.name, k.ports(client, shared)] as const),
  );
  const portsOf = (kind: KindName) => portsByKind.get(kind) as KindPorts;
  const kube = portsOf('khcheck').kube;
  const namespaces = [...new Set(opts.namespaces)];
  const inbox = opts.report.kind === 'hosted' ? reportInbox() : undefined;
  let server: RunningServer | undefined;
  let base: string;
  let key: ReportKey | undefined;
  if (opts.report.kind === 'external') {
    base = opts.report.url;
    key = opts.report.key;
  } else {
    const own = randomReportKey();
    const access = { key: own, unsigned: 'refuse' as const, scope: { namespaces } };
    const maxBodyBytes = opts.report.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const routeContext = {
      access,
      clock,
      log: opts.log,
      server: opts.runner,
      maxBodyBytes,
      deliver: inbox?.deliver,
    };
    const routes = Object.values(KINDS).flatMap((k) => {
      const route = portsOf(k.name).route?.(routeContext);
      return route ? [route] : [];
    });
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
        maxBodyBytes,
        access,
        ...(routes.length ? { extraRoutes: chainRoutes(routes) } : {}),
      },
    );
    base = server.url;
    key = own;
  }
  const urls = new Map<KindName, ReportingUrl>(
    Object.values(KINDS).map((k) => [k.name, k.reportingUrl(base, key)] as const),
  );
  const urlOf = (kind: KindName) => urls.get(kind) as ReportingUrl;
  const probe = endpointProbeFor(opts.report);
  // One notifier per session: one delivery budget, one read of each namespace's defaults, for every run.
  const notifier =
    opts.notify &&
    createNotifier(opts.notify, {
      http: fetchSender,
      clock,
      log: opts.log,
      readDefaults: kubeNamespaceDefaults(client),
      readParent: kubeParentStates(client),
    });
  const notifiers = new Map<KindName, RunNotifier>(
    notifier
      ? Object.values(KINDS).map((k) => [k.name, runNotifier(notifier, k.name, portsOf(k.name).kube)])
      : [],
  );
  const hostsReports = opts.report.kind === 'hosted';
  const kitFor = (kind: KindName): SessionKit => {
    const ports = portsOf(kind);
    return {
      runner: opts.runner,
      ports,
      deps: (run): AcquireDeps => ({
        kube: ports.kube,
        clock,
        ids: { runUuid: randomUUID },
        log: run.log ?? opts.log,
        events: ports.events,
        endpoints: probe,
        ...(notifiers.has(kind) ? { notify: notifiers.get(kind) } : {}),
      }),
      iterate: (deps, run) =>
        runIteration(deps, {
          namespace: run.target.namespace,
          checkName: run.target.name,
          runner: opts.runner,
          holder: `${opts.runner}/${randomUUID()}`,
          hostsReports,
          reportingUrl: urlOf(kind),
          inbox,
          signal: run.signal,
          timings: run.timings,
          leaseMs: opts.leaseMs,
          keepFinishedPods: opts.keepFinishedPods,
          onPhase: run.onPhase,
          refuse: kuberhealthyGuard(
            { namespace: run.target.namespace, name: run.target.name },
            { takeOver: opts.takeOver ?? false },
          ),
        }),
    };
  };
  return {
    client,
    kube,
    clock,
    run: (run) => kindOf(run.target.kind).run(kitFor(run.target.kind), run),
    close: async () => {
      sharing.abort();
      await server?.close();
    },
  };
}
