import { type KubeConfig, type KubernetesObject, Watch } from '@kubernetes/client-node';
import type { KubeClient } from './kube-client.ts';
import { getJson } from './rest.ts';

export interface Selectors {
  labelSelector?: string;
  fieldSelector?: string;
}

/** A list's query: the selectors and, for a bounded first list, at most limit items (then `continue` is set). */
export interface ListQuery extends Selectors {
  limit?: number;
  /**
   * '0': any resourceVersion, served from the API server's watch cache as it is (which may be a moment
   * behind etcd), the way an informer's first list is. Unset: the most recent (a consistent read).
   */
  resourceVersion?: '0';
}

export interface ListResult<T> {
  /** `continue`: set when a list with a limit left items out. */
  metadata?: { resourceVersion?: string; continue?: string };
  items: T[];
}

/** A watch event's object: the watched kind, or for type ERROR a Status (code 410: resourceVersion too old). */
export type WatchObject<T> = T & { code?: number };

/**
 * How list-and-watch reaches the API server. The real one is client-node's Watch plus a plain GET; tests
 * inject one they script, to drive reconnects and 410s without a server.
 */
export interface ListWatchTransport<T extends KubernetesObject> {
  list(path: string, query: ListQuery, signal: AbortSignal): Promise<ListResult<T>>;
  /**
   * Starts one watch request. onEvent is called per event; onDone exactly once when the request ends (null:
   * the server closed it; otherwise the error, with statusCode 410 when the resourceVersion expired).
   * Resolves with a handle that ends the request. onDone may run before that (client-node reports a failed
   * request before it returns), and aborting after onDone does nothing.
   */
  watch(
    path: string,
    query: Selectors & { resourceVersion?: string; allowWatchBookmarks: boolean },
    onEvent: (type: string, object: WatchObject<T>) => void,
    onDone: (error: unknown) => void,
  ): Promise<{ abort(): void }>;
}

/**
 * The transport over a real API server: lists through the client object (its bound, its clock), watches
 * apart from the bound; both through its keep-alive agent (a watch holds a connection of its own, which
 * resumes the agent's TLS session and uses its one TLS context).
 */
export function kubeListWatchTransport<T extends KubernetesObject>(
  client: Pick<KubeClient, 'kc' | 'clock' | 'within' | 'auth'>,
): ListWatchTransport<T> {
  const config: Pick<KubeConfig, 'getCurrentCluster' | 'applyToFetchOptions'> = {
    getCurrentCluster: () => client.kc.getCurrentCluster(),
    applyToFetchOptions: async (opts) => {
      const init = await client.kc.applyToFetchOptions(opts);
      return { ...init, agent: client.auth.share(init.agent) };
    },
  };
  const watch = new Watch(config as KubeConfig);
  return {
    list: (path, { limit, ...rest }, signal) =>
      getJson<ListResult<T>>(
        client,
        path,
        { ...rest, ...(limit !== undefined ? { limit: String(limit) } : {}) },
        signal,
      ),
    watch: (path, query, onEvent, onDone) => watch.watch(path, { ...query }, onEvent, onDone),
  };
}
