import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { kubePort } from '../kube/kube-port.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { UnsignedPolicy } from './authorize-report.ts';
import { type RunningServer, startReportServer } from './http-server.ts';
import { kubeCallerLookup } from './kube-lookup.ts';
import type { ReportKey } from './report-token.ts';
import { chainRoutes, healthRoutes, type Route } from './routes.ts';
import { sharedLookup } from './shared-lookup.ts';

export interface ServeOptions {
  client: KubeClient;
  /** The namespaces whose checker pods may report here: all, or a list. */
  scope: NamespaceScope;
  host: string;
  port: number;
  /** Written as AuthoritativePod with each accepted report. */
  identity: string;
  log: Log;
  clock?: Clock;
  /** Checks the signed reporting URLs runners hand out (KHRUN_REPORT_KEY); undefined: none configured. */
  reportKey: ReportKey | undefined;
  /** What to do with reports to the bare, unsigned path (KHRUN_REPORT_UNSIGNED). */
  unsigned: UnsignedPolicy;
  maxBodyBytes?: number;
  requestTimeoutMs?: number;
  maxConnections?: number;
  maxConnectionsPerSource?: number;
  maxBufferedBytes?: number;
  /** Routes served after the health routes and before the 404 (status pages plug in here). */
  extraRoutes?: readonly Route[];
}

export interface RunningServe {
  url: string;
  port: number;
  /** Readiness goes false at once; in-flight requests get up to graceMs; then the listener is closed. */
  shutdown(opts: { graceMs: number }): Promise<void>;
}

/**
 * The report endpoint as a long-running server shared by every runner: checker pods (in the listed
 * namespaces or all of them) report here, each report is stored in its check's khstate, and the runner
 * waiting on that khstate sees it by watch. Stateless: any number of replicas can serve behind a Service.
 */
export async function startServe(opts: ServeOptions): Promise<RunningServe> {
  const kube = kubePort(opts.client);
  const clock = opts.clock ?? { nowMs: () => Date.now() };
  // Signed reports name their run and never look a pod up; unsigned ones share lookups (shared-lookup.ts).
  const lookup = kubeCallerLookup(opts.client, opts.scope);
  let draining = false;
  const server: RunningServer = await startReportServer(
    {
      lookup: opts.unsigned === 'refuse' ? lookup : sharedLookup(lookup, { nowMs: () => performance.now() }),
      state: { read: kube.readState, replace: kube.replaceState },
      clock,
      log: opts.log,
      server: opts.identity,
    },
    {
      host: opts.host,
      port: opts.port,
      access: { key: opts.reportKey, unsigned: opts.unsigned, scope: opts.scope },
      maxBodyBytes: opts.maxBodyBytes,
      requestTimeoutMs: opts.requestTimeoutMs,
      maxConnections: opts.maxConnections,
      maxConnectionsPerSource: opts.maxConnectionsPerSource,
      maxBufferedBytes: opts.maxBufferedBytes,
      extraRoutes: chainRoutes([healthRoutes({ ready: () => !draining }), ...(opts.extraRoutes ?? [])]),
    },
  );
  return {
    url: server.url,
    port: server.port,
    async shutdown({ graceMs }) {
      draining = true;
      await server.close({ graceMs });
    },
  };
}
