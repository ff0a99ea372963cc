import {
  type ApiConstructor,
  type ApiType,
  createConfiguration,
  type HttpLibrary,
  type KubeConfig,
  Observable,
  type ObservableMiddleware,
  ServerConfiguration,
  VersionApi,
} from '@kubernetes/client-node';
import { keepAliveAuth } from './keep-alive.ts';
import { withinRequestLimit } from './request-limit.ts';
import { apiServerClock, type ServerClock } from './server-clock.ts';

/**
 * Wraps client-node's HTTP library so that every response, error statuses included, feeds the clock:
 * the time the request left, the time its headers arrived, and its `Date`. (A middleware sees requests
 * and responses apart and cannot pair them; the library's send can.) Each request, its body included, is
 * sent within `bound` (the KubeConfig's requests-in-flight limit, kube/request-limit.ts).
 */
export function timedHttpLibrary(
  inner: HttpLibrary,
  clock: ServerClock,
  bound: <T>(send: () => Promise<T>) => Promise<T> = (send) => send(),
): HttpLibrary {
  return {
    send(request) {
      return new Observable(
        bound(async () => {
          const sentMonoMs = clock.monoMs();
          const response = await inner.send(request).toPromise();
          clock.observe({ sentMonoMs, receivedMonoMs: clock.monoMs(), date: response.headers.date });
          // The body is read inside the bound: the response is not done until it has arrived.
          const body = await response.body.binary();
          return Object.assign(response, {
            body: { binary: async () => body, text: async () => body.toString('utf8') },
          });
        }),
      );
    },
  };
}

/**
 * kc.makeApiClient, with responses feeding the KubeConfig's API server clock (kube/server-clock.ts).
 * Per-call options (a user agent) still merge in as they do with makeApiClient.
 */
export function apiClient<T extends ApiType>(kc: KubeConfig, type: ApiConstructor<T>): T {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const base = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    // One keep-alive connection pool per KubeConfig instead of a new agent per request (keep-alive.ts).
    authMethods: { default: keepAliveAuth(kc) },
  });
  const bound = <R>(send: () => Promise<R>) => withinRequestLimit(kc, send);
  return new type({ ...base, httpApi: timedHttpLibrary(base.httpApi, apiServerClock(kc), bound) });
}

/**
 * Reads the API server's time once (GET /version, open to every client), unless a response has set the
 * clock already. For a long-running endpoint that may judge a report's arrival before it has made any
 * other request. Any HTTP answer will do; a transport failure, or no answer within timeoutMs, is thrown.
 */
export async function syncServerClock(
  kc: KubeConfig,
  opts: { timeoutMs: number; signal?: AbortSignal },
): Promise<void> {
  if (apiServerClock(kc).reading().synced) return;
  const signal = AbortSignal.any([
    AbortSignal.timeout(opts.timeoutMs),
    ...(opts.signal ? [opts.signal] : []),
  ]);
  const bounded: ObservableMiddleware = {
    pre: (context) => {
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  try {
    await apiClient(kc, VersionApi).getCode({}, { middleware: [bounded], middlewareMergeStrategy: 'append' });
  } catch (error) {
    if (!apiServerClock(kc).reading().synced) throw error;
  }
}
