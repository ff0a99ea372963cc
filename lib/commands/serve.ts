import type { KubeConfig } from '@kubernetes/client-node';
import type { Log } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { Route } from '../report/routes.ts';
import { startServe } from '../report/shared-server.ts';
import type { MetricsOptions } from '../status/metrics.ts';
import { startStateCache } from '../status/state-cache.ts';
import { statusRoutes } from '../status/status-routes.ts';

export interface ServeCommandOptions {
  kc: KubeConfig;
  scope: NamespaceScope;
  host: string;
  port: number;
  identity: string;
  maxBodyBytes?: number;
  requestTimeoutMs?: number;
  /** How long requests in flight may take to finish after SIGTERM. */
  drainMs: number;
  extraRoutes?: readonly Route[];
  /** Serve the status JSON, page and metrics too (default true), from a watched cache of khstates. */
  status?: boolean;
  metrics?: MetricsOptions;
  log: Log;
  /** Aborts on SIGTERM/SIGINT: the server drains and the command returns. */
  signal: AbortSignal;
  write: (line: string) => void;
}

/** `khrun serve`: serves until the signal, then shuts down gracefully; exit 0 after a clean drain. */
export async function serveCommand(opts: ServeCommandOptions): Promise<number> {
  const cache =
    opts.status === false
      ? undefined
      : startStateCache({
          kc: opts.kc,
          namespaces: opts.scope === 'all' ? undefined : opts.scope.namespaces,
          onInterruption: (reason) => opts.log.warn('khstate watch interrupted; resuming', { reason }),
        });
  const status: Route[] = cache
    ? [
        statusRoutes({
          states: () => cache.snapshot(),
          ready: () => cache.ready(),
          currentMaster: opts.identity,
          clock: { nowMs: Date.now },
          metrics: opts.metrics,
        }),
      ]
    : [];
  try {
    return await serveUntilSignal({ ...opts, extraRoutes: [...status, ...(opts.extraRoutes ?? [])] });
  } finally {
    await cache?.close();
  }
}

async function serveUntilSignal(opts: ServeCommandOptions): Promise<number> {
  const serve = await startServe(opts);
  const scope = opts.scope === 'all' ? 'all namespaces' : `namespaces ${opts.scope.namespaces.join(', ')}`;
  opts.log.info('serving', { url: serve.url, scope });
  opts.write(
    `khrun serve: reports at ${serve.url} for ${scope}; status at /, /status and /metrics; health at /healthz and /readyz`,
  );
  await new Promise<void>((resolve) => {
    if (opts.signal.aborted) resolve();
    else opts.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  const startedMs = Date.now();
  opts.log.info('shutting down', { reason: String(opts.signal.reason), drainMs: opts.drainMs });
  await serve.shutdown({ graceMs: opts.drainMs });
  opts.log.info('stopped', { drainedInMs: Date.now() - startedMs });
  return 0;
}
