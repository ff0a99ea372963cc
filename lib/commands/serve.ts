import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { healthCheckApi } from '../healthcheck/healthcheck-api.ts';
import { healthCheckPort } from '../healthcheck/healthcheck-port.ts';
import { healthCheckReportRoute } from '../healthcheck/report-route.ts';
import { loggableError } from '../kube/errors.ts';
import { type KubeClient, kubeClient, runnerClient, syncServerClock } from '../kube/kube-client.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { readLogTail } from '../logs/read-tail.ts';
import type { UnsignedPolicy } from '../report/authorize-report.ts';
import { DEFAULT_MAX_BODY_BYTES, REPORT_PATH } from '../report/http-server.ts';
import type { ReportKey } from '../report/report-token.ts';
import type { Route } from '../report/routes.ts';
import { startServe } from '../report/shared-server.ts';
import { runTarget } from '../session/run-target.ts';
import { type RunSettings, runSettings } from '../session/session.ts';
import type { MetricsOptions } from '../status/error-label.ts';
import { startHealthCheckCache } from '../status/healthcheck-cache.ts';
import { cachedTails } from '../status/log-tail-cache.ts';
import { startStateCache } from '../status/state-cache.ts';
import { statusRoutes } from '../status/status-routes.ts';
import { TRIGGER_PATH } from '../trigger/gate.ts';
import { triggerRoute } from '../trigger/trigger-route.ts';
import { triggerRuns } from '../trigger/trigger-runs.ts';
import { runResultJson } from './job-run.ts';

export interface ServeTriggerOptions extends RunSettings {
  token: string;
  maxRuns: number;
  maxWaitMs: number;
  /** Where checker pods of triggered runs reach this server: a URL, or a host on the server's port. */
  reportTo: { url: string } | { host: string };
  /** Signs the triggered runs' reporting URLs (the server's own key), when configured. */
  reportKey?: ReportKey;
}

export interface ServeCommandOptions {
  kc: KubeConfig;
  scope: NamespaceScope;
  host: string;
  port: number;
  identity: string;
  /** Checks signed reporting URLs (KHRUN_REPORT_KEY); what unsigned reports get (KHRUN_REPORT_UNSIGNED). */
  reportKey: ReportKey | undefined;
  unsigned: UnsignedPolicy;
  maxBodyBytes?: number;
  requestTimeoutMs?: number;
  /** How long requests in flight (and triggered runs) may take to finish after SIGTERM. */
  drainMs: number;
  extraRoutes?: readonly Route[];
  /** Serve the status JSON, page and metrics too (default true), from watched caches of khstates and HealthChecks. */
  status?: boolean;
  metrics?: MetricsOptions;
  /** `POST /api/run` (lib/trigger): mounted only when configured, with its token. */
  trigger?: ServeTriggerOptions;
  log: Log;
  /** Aborts on SIGTERM/SIGINT: the server drains and the command returns. */
  signal: AbortSignal;
  write: (line: string) => void;
}

/** `khrun serve`: serves until the signal, then shuts down gracefully; exit 0 after a clean drain. */
export async function serveCommand(opts: ServeCommandOptions): Promise<number> {
  // Reports, ages and triggered runs are judged by the API server's time, read before the first report.
  // One client object for the reports, the status caches and the v3 route (unbounded, as a tick's).
  const client = kubeClient(opts.kc, { log: opts.log });
  const { clock } = client;
  await syncServerClock(client, { timeoutMs: 5_000, signal: opts.signal }).catch((error: unknown) =>
    opts.log.warn("the API server's time could not be read; reports use the local clock until it answers", {
      error: loggableError(error),
    }),
  );
  const namespaces = opts.scope === 'all' ? undefined : opts.scope.namespaces;
  // One list-watch per kind: khstates, and the v3 HealthChecks that keep their result in their own status.
  const cache =
    opts.status === false
      ? undefined
      : {
          states: startStateCache({
            client,
            namespaces,
            onInterruption: (reason) => opts.log.warn('khstate watch interrupted; resuming', { reason }),
          }),
          healthChecks: startHealthCheckCache({
            client,
            namespaces,
            onInterruption: (reason) => opts.log.warn('HealthCheck watch interrupted; resuming', { reason }),
          }),
        };
  const status: Route[] = cache
    ? [
        statusRoutes({
          states: () => cache.states.snapshot(),
          healthChecks: () => cache.healthChecks.snapshot(),
          ready: () => cache.states.ready() && cache.healthChecks.ready(),
          currentMaster: opts.identity,
          clock,
          metrics: opts.metrics,
          // /api/logs: checker log tails through the API server's pods/log, each pod at most once a minute.
          readTail: cachedTails((key) => readLogTail(client.core, key), { nowMs: () => clock.nowMs() }),
        }),
      ]
    : [];
  // Kuberhealthy v3's report path, for HealthCheck runs (lib/healthcheck): the same key, policy and scope.
  const api = healthCheckApi(client);
  const check = healthCheckReportRoute({
    api,
    port: healthCheckPort(api),
    access: { key: opts.reportKey, unsigned: opts.unsigned, scope: opts.scope },
    clock,
    log: opts.log,
    server: opts.identity,
    maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
  });
  try {
    const extraRoutes = [check, ...status, ...(opts.extraRoutes ?? [])];
    return await serveUntilSignal({ ...opts, client, clock, extraRoutes });
  } finally {
    await Promise.all([cache?.states.close(), cache?.healthChecks.close()]);
  }
}

/**
 * The trigger's runs: one iteration each, whose checker pod reports to this very server (its report
 * endpoint is already on the listener). The reporting URL is known once the listener is up.
 */
function serveTrigger(opts: ServeCommandOptions, trigger: ServeTriggerOptions, reportingUrl: () => string) {
  // The triggered runs share one runner client object: RUNNER_REQUESTS_IN_FLIGHT between all of them.
  const client = runnerClient(opts.kc, opts.log);
  const runs = triggerRuns({
    maxRuns: trigger.maxRuns,
    maxWaitMs: trigger.maxWaitMs,
    log: opts.log,
    outcomeJson: (result, target) =>
      runResultJson(result, { namespace: target.namespace, name: target.checkName }),
    start: (target, hooks) =>
      runTarget(
        {
          ...runSettings(trigger),
          kc: opts.kc,
          client,
          runner: opts.identity,
          report: { kind: 'external', url: reportingUrl(), key: trigger.reportKey },
          log: opts.log,
        },
        {
          target: { kind: 'khcheck', namespace: target.namespace, name: target.checkName },
          signal: hooks.signal,
          onPhase: (phase) => {
            if (phase === 'claimed' || phase === 'adopted') hooks.onClaimed(phase === 'adopted');
          },
        },
      ),
  });
  const route = triggerRoute({
    gate: { auth: { kind: 'bearer', token: trigger.token }, scope: opts.scope, canWait: true },
    runs,
  });
  return { runs, route };
}

function urlFor(reportTo: ServeTriggerOptions['reportTo'], port: number): string {
  if ('url' in reportTo) return reportTo.url;
  const host =
    reportTo.host.includes(':') && !reportTo.host.startsWith('[') ? `[${reportTo.host}]` : reportTo.host;
  return `http://${host}:${port}${REPORT_PATH}`;
}

async function serveUntilSignal(
  opts: ServeCommandOptions & { client: KubeClient; clock: Clock },
): Promise<number> {
  let reportingUrl = '';
  const trigger = opts.trigger ? serveTrigger(opts, opts.trigger, () => reportingUrl) : undefined;
  const serve = await startServe({
    ...opts,
    extraRoutes: [...(trigger ? [trigger.route] : []), ...(opts.extraRoutes ?? [])],
  });
  if (opts.trigger) reportingUrl = urlFor(opts.trigger.reportTo, serve.port);
  const scope = opts.scope === 'all' ? 'all namespaces' : `namespaces ${opts.scope.namespaces.join(', ')}`;
  opts.log.info('serving', {
    url: serve.url,
    scope,
    ...(trigger ? { trigger: TRIGGER_PATH, reportingUrl } : {}),
  });
  // No key and unsigned refused: `--no-reports` (serve-options.ts), a status server.
  const reports = opts.reportKey !== undefined || opts.unsigned !== 'refuse';
  const base = serve.url.slice(0, -REPORT_PATH.length);
  opts.write(
    (reports
      ? `khrun serve: reports at ${serve.url} for ${scope}; status at /, /status and /metrics`
      : `khrun serve: status at ${base}/, /status and /metrics for ${scope}; no reports taken (--no-reports)`) +
      '; health at /healthz and /readyz' +
      (trigger
        ? `; runs triggered at POST ${TRIGGER_PATH} (bearer token), their pods reporting to ${reportingUrl}`
        : ''),
  );
  await new Promise<void>((resolve) => {
    if (opts.signal.aborted) resolve();
    else opts.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  const startedMs = Date.now();
  opts.log.info('shutting down', { reason: String(opts.signal.reason), drainMs: opts.drainMs });
  // Triggered runs first, while the listener still takes their reports; what is left is cancelled
  // (resumable: the claim released) before the listener closes within the rest of the drain time.
  if (trigger) {
    const active = trigger.runs.active();
    if (active.length) opts.log.info('waiting for triggered runs', { runs: active });
    await trigger.runs.close({ graceMs: opts.drainMs });
  }
  await serve.shutdown({ graceMs: Math.max(0, opts.drainMs - (Date.now() - startedMs)) });
  opts.log.info('stopped', { drainedInMs: Date.now() - startedMs });
  return 0;
}
