import type { ServeFleetOptions } from '../config/serve-fleet-options.ts';
import { reasonOf } from '../core/fan-out.ts';
import type { Log } from '../core/log.ts';
import { type KubeClient, kubeClient, withSignal } from '../kube/kube-client.ts';
import { startServe } from '../report/shared-server.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../schedule/run-job.ts';
import { scheduleOf } from '../schedule/schedule-of.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL, type KhCheck } from '../state/resources.ts';
import { clusterProbe } from '../status/cluster-probe.ts';
import { type ClusterSource, handleFleetStatusRequest } from '../status/fleet-routes.ts';
import { startHealthCheckCache } from '../status/healthcheck-cache.ts';
import { startStateCache } from '../status/state-cache.ts';
import { statusRoutesOf } from '../status/status-routes.ts';
import { jobDispatcher, readRunnerTemplate } from '../tick/tick-kube.ts';
import { fleetTriggerRoute } from '../trigger/fleet-trigger-route.ts';
import { TRIGGER_PATH } from '../trigger/gate.ts';

/** How often a status request may probe a cluster's API server, and how long a probe may take. */
const PROBE = { freshMs: 5_000, timeoutMs: 3_000 };

/** One cluster's watched caches, and its status source: unreachable while its API server does not answer. */
function clusterWatch(name: string, client: KubeClient, namespaces: string[] | undefined, log: Log) {
  let interruption: string | undefined;
  const onInterruption = (what: string) => (reason: string) => {
    interruption = reason;
    log.warn(`${what} watch interrupted; resuming`, { cluster: name, reason });
  };
  const states = startStateCache({ client, namespaces, onInterruption: onInterruption('khstate') });
  const healthChecks = startHealthCheckCache({
    client,
    namespaces,
    onInterruption: onInterruption('HealthCheck'),
  });
  const probe = clusterProbe((signal) => withSignal(client, signal).version.getCode(), PROBE);
  const source: ClusterSource = {
    name,
    async read() {
      await probe.check();
      if (!states.ready() || !healthChecks.ready())
        throw new Error(`not listed yet${interruption ? `: ${interruption}` : ''}`);
      return { states: states.snapshot(), healthChecks: healthChecks.snapshot() };
    },
  };
  return { source, close: () => Promise.all([states.close(), healthChecks.close()]) };
}

/**
 * `khrun serve --context A,B` / `--all-contexts`: one server over several clusters. Each cluster has a
 * client object and watched caches of its own; the status routes (lib/status/fleet-routes.ts) show every
 * cluster, one that cannot be read as such. With a trigger token, `POST /api/run?cluster=C&namespace=NS&
 * check=NAME` makes a runner Job in cluster C from its runner PodTemplate, as the tick would, and answers
 * 202. It takes no reports: each cluster's runners report to their own endpoint (the runner PodTemplate's
 * default) or to their cluster's khrun-server; a report sent here is refused.
 */
export async function serveFleetCommand(
  opts: ServeFleetOptions & { log: Log; signal: AbortSignal; write: (line: string) => void },
): Promise<number> {
  const namespaces = opts.scope === 'all' ? undefined : opts.scope.namespaces;
  const clients = new Map(opts.clusters.map((c) => [c.name, kubeClient(c.kc, { log: opts.log })]));
  const watches = [...clients].map(([name, client]) => clusterWatch(name, client, namespaces, opts.log));
  const status = statusRoutesOf((request) =>
    handleFleetStatusRequest(
      {
        clusters: watches.map((w) => w.source),
        currentMaster: opts.identity,
        clock: { nowMs: Date.now },
        metrics: opts.metrics,
        concurrency: opts.settings.concurrency,
        deadlineMs: opts.settings.deadlineMs,
      },
      request,
    ),
  );
  const trigger = opts.trigger;
  const triggerRoutes = trigger
    ? [
        fleetTriggerRoute({
          gate: {
            auth: { kind: 'bearer', token: trigger.token },
            scope: opts.scope,
            canWait: false,
            clusters: [...clients.keys()],
          },
          log: opts.log,
          async dispatch(target) {
            const client = clients.get(target.cluster)!;
            const { namespace, name } = trigger.runner;
            // The khcheck's timeout sizes the Job (its 404 is the trigger's).
            const khcheck = (await client.custom.getNamespacedCustomObject({
              group: KH_GROUP,
              version: KH_VERSION,
              plural: KHCHECK_PLURAL,
              namespace: target.namespace,
              name: target.checkName,
            })) as KhCheck;
            const { timeoutMs, runIntervalMs } = scheduleOf(khcheck);
            const check = {
              kind: 'khcheck' as const,
              namespace: target.namespace,
              name: target.checkName,
              timeoutMs,
              runIntervalMs,
            };
            const dispatcher = jobDispatcher({
              client,
              namespace,
              template: await readRunnerTemplate(client, namespace, name),
              jobOptions: DEFAULT_RUN_JOB_OPTIONS,
            });
            const ref = dispatcher.refFor(check, client.clock.nowMs());
            await dispatcher.dispatch(check, ref);
            return ref;
          },
        }),
      ]
    : [];
  const first = clients.values().next().value as KubeClient;
  try {
    const serve = await startServe({
      // No report is taken here: no key, and unsigned reports refused, so none reaches any cluster.
      client: first,
      scope: opts.scope,
      host: opts.host,
      port: opts.port,
      identity: opts.identity,
      log: opts.log,
      reportKey: undefined,
      unsigned: 'refuse',
      requestTimeoutMs: opts.requestTimeoutMs,
      extraRoutes: [...triggerRoutes, status],
    });
    const names = [...clients.keys()].join(', ');
    opts.log.info('serving several clusters', { url: serve.url, clusters: names });
    opts.write(
      `khrun serve: status of clusters ${names} at ${serve.url.replace(/\/externalCheckStatus$/, '')}/, /status and /metrics` +
        (trigger
          ? `; runs triggered at POST ${TRIGGER_PATH}?cluster=C (bearer token) as runner Jobs in C`
          : '') +
        '; no reports are taken here',
    );
    await new Promise<void>((resolve) => {
      if (opts.signal.aborted) resolve();
      else opts.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    opts.log.info('shutting down', { reason: reasonOf(opts.signal.reason), drainMs: opts.drainMs });
    await serve.shutdown({ graceMs: opts.drainMs });
    return 0;
  } finally {
    await Promise.all(watches.map((w) => w.close()));
  }
}
