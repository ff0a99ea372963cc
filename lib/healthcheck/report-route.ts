import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { ReportAccess } from '../report/authorize-report.ts';
import type { Route } from '../report/routes.ts';
import { checkRoute } from './check-route.ts';
import type { CheckReportDeps } from './handle-check-report.ts';
import type { HealthCheckApi } from './healthcheck-api.ts';
import type { HealthCheckPort } from './healthcheck-port.ts';
import { readHealthCheckStatus } from './status-view.ts';

/**
 * v3's lookup of a report without a signed run (`findCheckByUUID`): the HealthCheck whose
 * status.currentUUID is the header's UUID, among the namespaces served. One LIST per namespace.
 */
export function findRunByUuid(api: HealthCheckApi, scope: NamespaceScope): CheckReportDeps['findRun'] {
  return async (uuid) => {
    const namespaces = scope === 'all' ? [undefined] : scope.namespaces;
    for (const namespace of namespaces) {
      for (const hc of await api.list(namespace)) {
        if (readHealthCheckStatus(hc).currentUUID === uuid)
          return { namespace: hc.metadata.namespace, checkName: hc.metadata.name };
      }
    }
    return null;
  };
}

/** `POST /check` over HealthChecks: reports land in the check's state view through the HealthCheck port. */
export function healthCheckReportRoute(opts: {
  api: HealthCheckApi;
  port: HealthCheckPort;
  access: ReportAccess;
  clock: Clock;
  log: Log;
  /** Written as the report's AuthoritativePod (khrun.dev/authoritative-pod). */
  server: string;
  maxBodyBytes: number;
  /** Hands a signed run's report to that run when this process waits for it (lib/run/report-inbox.ts). */
  deliver?: CheckReportDeps['deliver'];
}): Route {
  return checkRoute(
    {
      findRun: findRunByUuid(opts.api, opts.access.scope),
      state: { read: opts.port.readState, replace: opts.port.replaceState },
      clock: opts.clock,
      log: opts.log,
      server: opts.server,
      ...(opts.deliver ? { deliver: opts.deliver } : {}),
    },
    { access: opts.access, maxBodyBytes: opts.maxBodyBytes },
  );
}
