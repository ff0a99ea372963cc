import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/kube-client.ts';
import { runListWatch } from '../kube/list-watch.ts';
import type { ListWatchTransport } from '../kube/list-watch-transport.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../state/resources.ts';

/** Read access to the khstates (or, ObjectSource<HealthCheck>, HealthChecks) a status view is built from. */
export interface ObjectSource<T> {
  /** The current objects; the same array until something changes (callers must not modify it). */
  snapshot(): readonly T[];
  /** True once every watched scope has been listed; a view built before that would be incomplete. */
  ready(): boolean;
}

export type StateSource = ObjectSource<KhState>;

export interface ObjectCache<T> extends ObjectSource<T> {
  /** Increments on every change: a cheap key for caching what is rendered from a snapshot. */
  version(): number;
  /** Calls listener after every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
  /** Resolves once ready; rejects when timeoutMs passes or the cache is closed first. */
  whenReady(timeoutMs: number): Promise<void>;
  /** Stops the watches and waits for them to end. */
  close(): Promise<void>;
}

export type StateCache = ObjectCache<KhState>;

export interface StateCacheOptions {
  client: KubeClient;
  /** Namespaces to watch; empty or absent watches khstates in all namespaces (one cluster-wide watch). */
  namespaces?: readonly string[];
  /** The watch broke and is being re-established; the snapshot may be stale meanwhile. */
  onInterruption?: (reason: string) => void;
}

/** One kind a cache holds: its collection path per scope (undefined: all namespaces) and its name in errors. */
export interface CachedKind<T extends KubernetesObject = KubernetesObject> {
  pathOf: (namespace?: string) => string;
  noun: string;
  /** Where its lists and watches go; default the client's API server (healthcheck-cache.ts bridges a missing CRD). */
  transport?: ListWatchTransport<T>;
}

const statesPath = (namespace?: string) =>
  namespace
    ? `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${namespace}/${KHSTATE_PLURAL}`
    : `/apis/${KH_GROUP}/${KH_VERSION}/${KHSTATE_PLURAL}`;

/**
 * An informer-style cache of khstates: list, then watch, per scope (runListWatch resumes, relists on 410
 * and backs off), so a status request reads memory instead of listing. Starts at once; close() owns the
 * watches' end.
 */
export function startStateCache(opts: StateCacheOptions): StateCache {
  return startObjectCache<KhState>(opts, { pathOf: statesPath, noun: 'khstate' });
}

/** The cache of startStateCache for any namespaced kind (one list per kind: healthcheck-cache.ts). */
export function startObjectCache<T extends KubernetesObject>(
  opts: StateCacheOptions,
  kind: CachedKind<T>,
): ObjectCache<T> {
  const stop = new AbortController();
  const scopes: (string | undefined)[] = opts.namespaces?.length
    ? [...new Set(opts.namespaces)]
    : [undefined];
  const sets = new Map<string | undefined, ReadonlyMap<string, T>>();
  const listeners = new Set<() => void>();
  let version = 0;
  let cached: readonly T[] | undefined = [];

  const notify = () => {
    version += 1;
    cached = undefined;
    for (const listener of [...listeners]) listener();
  };
  const done = Promise.all(
    scopes.map((scope) =>
      runListWatch<T>({
        kc: opts.client,
        path: kind.pathOf(scope),
        transport: kind.transport,
        signal: stop.signal,
        onInterruption: opts.onInterruption,
        onChange: (items) => {
          sets.set(scope, items);
          notify();
        },
      }),
    ),
  );
  const ready = () => sets.size === scopes.length;
  const subscribe = (listener: () => void) => {
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  };

  return {
    snapshot() {
      if (!cached) cached = [...sets.values()].flatMap((items) => [...items.values()]);
      return cached;
    },
    ready,
    version: () => version,
    subscribe,
    whenReady(timeoutMs) {
      if (ready()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timeout = AbortSignal.timeout(timeoutMs);
        const signal = AbortSignal.any([timeout, stop.signal]);
        const finish = (error?: Error) => {
          unsubscribe();
          signal.removeEventListener('abort', onAbort);
          if (error) reject(error);
          else resolve();
        };
        const onAbort = () =>
          finish(
            new Error(
              timeout.aborted
                ? `the ${kind.noun} cache was not ready after ${timeoutMs} ms (listed ${sets.size} of ${scopes.length} scopes)`
                : `the ${kind.noun} cache was closed before it was ready`,
            ),
          );
        const unsubscribe = subscribe(() => {
          if (ready()) finish();
        });
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
    },
    async close() {
      stop.abort();
      await done;
      listeners.clear();
    },
  };
}

/**
 * One list of the khstates, for a short-lived process (the CLI, a Lambda) where keeping a watch open would
 * cost more than it saves.
 */
export async function listKhStates(client: KubeClient, namespaces?: readonly string[]): Promise<KhState[]> {
  const custom = client.custom;
  const co = { group: KH_GROUP, version: KH_VERSION, plural: KHSTATE_PLURAL };
  const lists = namespaces?.length
    ? await Promise.all(
        [...new Set(namespaces)].map((namespace) => custom.listNamespacedCustomObject({ ...co, namespace })),
      )
    : [await custom.listClusterCustomObject(co)];
  return lists.flatMap((list) => (list as { items: KhState[] }).items);
}
