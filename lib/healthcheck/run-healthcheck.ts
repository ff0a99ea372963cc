import { randomUUID } from 'node:crypto';
import { runnerClient } from '../kube/kube-client.ts';
import { CHECK_PATH, signedCheckUrl } from '../report/check-url.ts';
import { DEFAULT_MAX_BODY_BYTES, type RunningServer, startReportServer } from '../report/http-server.ts';
import { kubeCallerLookup } from '../report/kube-lookup.ts';
import { type ReportingUrl, randomReportKey } from '../report/report-token.ts';
import { endpointProbeFor } from '../run/endpoint-probe.ts';
import { CheckNotFoundError } from '../run/errors.ts';
import type { RunCheckOptions } from '../run/invocation.ts';
import { type IterationResult, runIteration } from '../run/iteration.ts';
import { kuberhealthyGuard } from '../takeover/guard.ts';
import { healthCheckEventSink } from './events.ts';
import { healthCheckApi } from './healthcheck-api.ts';
import { healthCheckPort } from './healthcheck-port.ts';
import { healthCheckReportRoute } from './report-route.ts';

/** The HealthCheck named on the command line does not exist: a usage error (exit 2), as for a khcheck. */
export class HealthCheckNotFoundError extends CheckNotFoundError {
  override readonly name: string = 'HealthCheckNotFoundError';
  constructor(namespace: string, name: string, options?: ErrorOptions) {
    super(
      namespace,
      name,
      'HealthCheck',
      `HealthCheck ${namespace}/${name} not found; list them with "kubectl get healthchecks -A" and pass --healthcheck NAME --namespace NS`,
      options,
    );
  }
}

/** A report URL's /check twin: v3's client takes no other path, so a configured path prefix is dropped. */
export function checkUrlOf(reportUrl: string): string {
  const url = new URL(reportUrl);
  url.pathname = CHECK_PATH;
  url.search = '';
  return url.toString();
}

/**
 * One invocation of the runner for a HealthCheck: runIteration over the HealthCheck port, checker pods
 * reporting to `/check` (v3's path), either at this process's own endpoint (a key of its own, signed URLs
 * only) or at the configured endpoint's /check (signed with the deployment's key when there is one, else
 * bare, looked up by kh-run-uuid as v3 does). Everything it started is stopped on return.
 */
export async function runHealthCheck(opts: RunCheckOptions): Promise<IterationResult> {
  // A runner's client object (bounded as a session's), unless one is handed in to share.
  const client = opts.client ?? runnerClient(opts.kc, opts.log);
  const { clock } = client;
  const api = healthCheckApi(client);
  const kube = healthCheckPort(api);
  let server: RunningServer | undefined;
  try {
    let reportingUrl: ReportingUrl;
    if (opts.report.kind === 'external') {
      const { key } = opts.report;
      const base = checkUrlOf(opts.report.url);
      reportingUrl = key ? (run) => signedCheckUrl(base, key, run) : base;
    } else {
      const key = randomReportKey();
      const access = { key, unsigned: 'refuse' as const, scope: { namespaces: [opts.namespace] } };
      const maxBodyBytes = opts.report.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
      server = await startReportServer(
        {
          lookup: kubeCallerLookup(client, { namespaces: [opts.namespace] }),
          state: { read: kube.readState, replace: kube.replaceState },
          clock,
          log: opts.log,
          server: opts.runner,
        },
        {
          host: opts.report.host,
          port: opts.report.port,
          maxBodyBytes,
          access,
          extraRoutes: healthCheckReportRoute({
            api,
            port: kube,
            access,
            clock,
            log: opts.log,
            server: opts.runner,
            maxBodyBytes,
          }),
        },
      );
      const base = checkUrlOf(server.url);
      reportingUrl = (run) => signedCheckUrl(base, key, run);
    }
    return await runIteration(
      {
        kube,
        clock,
        ids: { runUuid: randomUUID },
        log: opts.log,
        events: healthCheckEventSink(client),
        endpoints: endpointProbeFor(opts.report),
      },
      {
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
        // The same guard as a khcheck's run (lib/takeover), on the HealthCheck's state view.
        refuse: kuberhealthyGuard(
          { namespace: opts.namespace, name: opts.checkName },
          { takeOver: opts.takeOver ?? false },
        ),
      },
    );
  } catch (error) {
    if (error instanceof CheckNotFoundError)
      throw new HealthCheckNotFoundError(opts.namespace, opts.checkName, { cause: error });
    throw error;
  } finally {
    await server?.close();
  }
}
