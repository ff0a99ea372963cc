import {
  type ApiConstructor,
  type ApiType,
  AppsV1Api,
  AuthenticationV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  createConfiguration,
  type HttpLibrary,
  type KubeConfig,
  Observable,
  type ObservableMiddleware,
  ServerConfiguration,
  VersionApi,
} from '@kubernetes/client-node';
import { type Limiter, limiter, type Placement } from '../core/limit.ts';
import type { Log } from '../core/log.ts';
import { type KeepAliveAuth, keepAliveAuth } from './keep-alive.ts';
import { RUNNER_REQUESTS_IN_FLIGHT } from './request-limit.ts';
import { type ServerClock, serverClock } from './server-clock.ts';
import { timedHttpLibrary } from './timed-client.ts';
import { namingServer } from './unreachable.ts';

/**
 * khrun's way to one API server: the typed clients, and what every request they send shares. Made once
 * by a composition root (a runner session, a command, a Lambda's warm runtime) and handed down; ports take
 * it, or what they need of it, and keep no state of their own keyed on it.
 */
export interface KubeClient {
  /** The KubeConfig it was made from: for what client-node takes one for (a Watch, KubernetesObjectApi). */
  readonly kc: KubeConfig;
  /** The API server's clock, fed by every response this client receives (server-clock.ts). */
  readonly clock: ServerClock;
  /** The bound on this client's requests in flight (watches aside); undefined: unbounded. */
  readonly limit: Limiter | undefined;
  /** The kubeconfig's authentication, handing every request this client's one keep-alive agent (keep-alive.ts). */
  readonly auth: KeepAliveAuth;
  /** Sends one request within the bound, if there is one. */
  within<T>(send: () => Promise<T>): Promise<T>;
  readonly core: CoreV1Api;
  readonly batch: BatchV1Api;
  readonly custom: CustomObjectsApi;
  readonly apps: AppsV1Api;
  readonly version: VersionApi;
  /** Who this client is (SelfSubjectReview): `khrun silence` records it. */
  readonly authentication: AuthenticationV1Api;
}

export interface KubeClientOptions {
  /** The most requests in flight at once; the rest queue (request-limit.ts). Default: unbounded. */
  maxInFlight?: number;
  /** Where the clock's one skew warning goes. */
  log?: Log;
}

/**
 * The client object over kc. Each call makes a client of its own: its own bound, clock and keep-alive
 * agent, shared by every typed client and GET made through it and by nothing else. Whatever must share a
 * bound or a clock (serve's triggered runs, the checks of a batch) is handed the same client object; two
 * made from one KubeConfig (a tick and the runner session it starts in-process) do not bound each other.
 * The typed clients are made on first use, once each.
 */
export function kubeClient(kc: KubeConfig, opts: KubeClientOptions = {}): KubeClient {
  const clock = serverClock({
    onSkew: (skewMs) =>
      opts.log?.warn("the local clock is off the API server's; khrun decides by the API server's time", {
        skewMs: Math.round(skewMs),
      }),
  });
  const limit = opts.maxInFlight === undefined ? undefined : limiter(opts.maxInFlight);
  const within = <T>(send: () => Promise<T>): Promise<T> => (limit ? limit(send) : send());
  return clientOver(kc, { clock, limit, auth: keepAliveAuth(kc), within }, undefined);
}

/**
 * The same client object (its clock, bound and keep-alive agent shared) whose requests, when they must
 * wait for the bound, go ahead of every request waiting (the limiter's `first`). For a run's lease
 * renewals: queued behind a batch's claims, pod creates and records, 8 at a time at a loaded API server,
 * renewals of runs waiting on their pods were sent up to 100 s after their lease ran out (the fleet section
 * at 1,000 checks), and a run whose lapsed lease another runner took stepped down and ran again.
 */
export function ahead(client: KubeClient): KubeClient {
  return placed(client, 'first');
}

/**
 * The same client object whose requests, when they must wait for the bound, wait behind every request that
 * is not so marked (the limiter's `last`). For a batch's claims: a batch starts its runs at once, and in
 * turn its 50 claims would all be sent before the first run's pod create, so the node (the limit of a
 * fleet's time) would get its first checker only after the last claim. Behind, each claimed run's pod
 * create goes next, and checkers start while the other claims are still queued.
 */
export function behind(client: KubeClient): KubeClient {
  return placed(client, 'last');
}

function placed(client: KubeClient, place: Placement): KubeClient {
  const { limit } = client;
  const within = <T>(send: () => Promise<T>): Promise<T> => (limit ? limit(send, place) : send());
  return clientOver(client.kc, { ...client, within }, undefined);
}

/**
 * The same client object (its clock, bound and keep-alive agent shared), every request of which is also
 * sent with signal: once it aborts, its requests in flight are cut and new ones fail at once. One cluster's
 * deadline in a fan-out over several (core/fan-out.ts), on a client that outlives it (a warm Lambda's).
 */
export function withSignal(client: KubeClient, signal: AbortSignal): KubeClient {
  return clientOver(client.kc, client, signal);
}

function clientOver(
  kc: KubeConfig,
  shared: Pick<KubeClient, 'clock' | 'limit' | 'auth' | 'within'>,
  signal: AbortSignal | undefined,
): KubeClient {
  const { clock, limit, auth, within } = shared;
  const made = new Map<ApiConstructor<ApiType>, ApiType>();
  const api = <T extends ApiType>(type: ApiConstructor<T>): T => {
    let client = made.get(type) as T | undefined;
    if (!client) {
      client = typedClient(kc, type, { clock, auth, within }, signal);
      made.set(type, client);
    }
    return client;
  };
  return {
    kc,
    clock,
    limit,
    auth,
    within,
    get core() {
      return api(CoreV1Api);
    },
    get batch() {
      return api(BatchV1Api);
    },
    get custom() {
      return api(CustomObjectsApi);
    },
    get apps() {
      return api(AppsV1Api);
    },
    get version() {
      return api(VersionApi);
    },
    get authentication() {
      return api(AuthenticationV1Api);
    },
  };
}

/**
 * A runner process's client object: its checks take turns at the API server, RUNNER_REQUESTS_IN_FLIGHT
 * requests at a time (watches aside). Made once per session unless one is handed in to share.
 */
export const runnerClient = (kc: KubeConfig, log?: Log): KubeClient =>
  kubeClient(kc, { maxInFlight: RUNNER_REQUESTS_IN_FLIGHT, log });

/**
 * kc.makeApiClient, with responses feeding the clock, requests sent within the bound and through the one
 * keep-alive agent, and a request that cannot reach the server failing with ApiServerUnreachableError.
 * Per-call options (a user agent) still merge in as they do with makeApiClient.
 */
function typedClient<T extends ApiType>(
  kc: KubeConfig,
  type: ApiConstructor<T>,
  shared: Pick<KubeClient, 'clock' | 'auth' | 'within'>,
  signal: AbortSignal | undefined,
): T {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const base = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: shared.auth },
  });
  const httpApi = namingServer(base.httpApi, cluster.server);
  const timed = timedHttpLibrary(httpApi, shared.clock, shared.within);
  return new type({ ...base, httpApi: signal ? abortingWith(timed, signal) : timed });
}

/** Sends every request with signal as well as its own (a per-call one, such as syncServerClock's). */
function abortingWith(inner: HttpLibrary, signal: AbortSignal): HttpLibrary {
  return {
    send(request) {
      const own = request.getSignal();
      request.setSignal(own ? AbortSignal.any([own, signal]) : signal);
      return inner.send(request);
    },
  };
}

/**
 * Reads the API server's time once (GET /version, open to every client), unless a response has set the
 * clock already. For a long-running endpoint that may judge a report's arrival before it has made any
 * other request. Any HTTP answer will do; a transport failure, or no answer within timeoutMs, is thrown.
 */
export async function syncServerClock(
  client: Pick<KubeClient, 'clock' | 'version'>,
  opts: { timeoutMs: number; signal?: AbortSignal },
): Promise<void> {
  if (client.clock.reading().synced) return;
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
    await client.version.getCode({}, { middleware: [bounded], middlewareMergeStrategy: 'append' });
  } catch (error) {
    if (!client.clock.reading().synced) throw error;
  }
}
