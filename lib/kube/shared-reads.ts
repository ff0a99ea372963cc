import { getMaxListeners, setMaxListeners } from 'node:events';
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import {
  KH_GROUP,
  KH_VERSION,
  KHCHECK_PLURAL,
  KHSTATE_PLURAL,
  type KhCheck,
  type KhState,
} from '../state/resources.ts';
import type { ListWatchTransport } from './list-watch-transport.ts';
import { type PodFeed, podFeed, SHARED_LIST_RETRY } from './pod-feed.ts';
import { retryTransient } from './transient.ts';

/**
 * What the runs of one batch read together, one namespace at a time: the namespace's khchecks and khstates
 * in one list each (each run's first read of its khcheck and of its khstate, its claim's, is taken from
 * them) and its checker pods in one feed (pod-feed.ts). A batch of 25 checks in a namespace then sends 3
 * lists and 1 watch there, not 50 gets, 25 lists and 25 watches. Every write stays a compare-and-swap on
 * the resourceVersion read, so a state taken from a list that is no longer current costs a conflict and a
 * fresh read, never a lost write; a khcheck read a moment earlier is one a get could have returned too.
 */
export interface SharedReads {
  /**
   * The khstate of ns/name as the namespace's one list returned it (null: not in the list), the first time
   * it is asked for and while the list is fresh (maxAgeMs); undefined otherwise, or when the namespace was
   * declined (more khstates than its bound) or its list failed: the caller then reads it itself.
   */
  takeState(namespace: string, name: string): Promise<{ state: KhState | null } | undefined>;
  /** The khcheck of ns/name, as takeState gives a khstate (a list refused by RBAC: the caller reads it). */
  takeCheck(namespace: string, name: string): Promise<{ check: KhCheck | null } | undefined>;
  /** The namespace's pod feed, for the namespaces of the batch only. */
  pods(namespace: string): PodFeed | undefined;
}

export interface SharedReadsOptions {
  /** Where lists and watches go (kubeListWatchTransport over the session's client). */
  transport: ListWatchTransport<KubernetesObject>;
  /** How many of the batch's checks live in each namespace: the only namespaces read ahead. */
  checksPerNamespace: ReadonlyMap<string, number>;
  /** A monotonic clock in ms (the client's): how old a list is. */
  monoMs: () => number;
  /** The batch's life: the feeds' watches end when it aborts. */
  signal: AbortSignal;
  onNotice?: (message: string, fields: Record<string, unknown>) => void;
  /** A list older than this is not read from (default SHARED_READ_MAX_AGE_MS). */
  maxAgeMs?: number;
}

/**
 * 15 s: a batch starts its checks at once (BATCH_CONCURRENCY is at least the tick's default batch size), so
 * its claims read within a second or two of the list; a check that waits for a slot longer reads its own state.
 */
export const SHARED_READ_MAX_AGE_MS = 15_000;

/**
 * The bound of a namespace's list: room for every check of the batch there several times over, and a page
 * more. A namespace holding more (a large shared one) is cheaper read one object at a time.
 */
export const stateListLimit = (checks: number) => 2 * checks + 50;
/** Checker pods: the finished ones kept per check (3 by default), the running one, and some room. */
export const podListLimit = (checks: number) => 8 * checks + 50;

interface NamespaceList<T> {
  byName: Map<string, T>;
  atMs: number;
  taken: Set<string>;
}

export function sharedReads(opts: SharedReadsOptions): SharedReads {
  const maxAgeMs = opts.maxAgeMs ?? SHARED_READ_MAX_AGE_MS;
  // Every run that follows its pods through a feed listens on the batch's signal until it ends (one
  // listener per check, beside each feed's own watch): the expected count, not a leak to warn about.
  const listeners =
    [...opts.checksPerNamespace.values()].reduce((a, b) => a + b, 0) + 2 * opts.checksPerNamespace.size;
  setMaxListeners(Math.max(getMaxListeners(opts.signal), listeners + 10), opts.signal);
  const states = namespaceLists<KhState>(opts, KHSTATE_PLURAL);
  const checks = namespaceLists<KhCheck>(opts, KHCHECK_PLURAL);
  /** The first read of ns/name from its namespace's list while that is fresh; undefined: read it yourself. */
  const take = async <T>(lists: NamespaceLists<T>, namespace: string, name: string) => {
    const list = await lists.of(namespace);
    if (!list || list.taken.has(name) || opts.monoMs() - list.atMs > maxAgeMs) return undefined;
    list.taken.add(name);
    return list.byName.get(name) ?? null;
  };
  return {
    async takeState(namespace, name) {
      const state = await take(states, namespace, name);
      return state === undefined ? undefined : { state };
    },
    async takeCheck(namespace, name) {
      const check = await take(checks, namespace, name);
      return check === undefined ? undefined : { check };
    },
    pods: oncePerNamespace(opts.checksPerNamespace, (namespace, count) =>
      podFeed({
        namespace,
        transport: opts.transport as unknown as ListWatchTransport<V1Pod>,
        limit: podListLimit(count),
        signal: opts.signal,
        onNotice: opts.onNotice,
      }),
    ),
  };
}

interface NamespaceLists<T> {
  /** The namespace's one list (made on first ask); undefined: not a batch namespace, declined or failed. */
  of(namespace: string): Promise<NamespaceList<T> | undefined>;
}

/** One list per batch namespace of a comcast.github.io resource, bounded by stateListLimit. */
function namespaceLists<T extends KubernetesObject>(
  opts: SharedReadsOptions,
  plural: string,
): NamespaceLists<T> {
  const list = async (namespace: string, count: number): Promise<NamespaceList<T> | undefined> => {
    const path = `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${namespace}/${plural}`;
    const limit = stateListLimit(count);
    try {
      const answer = await retryTransient(
        () => opts.transport.list(path, { limit }, opts.signal),
        SHARED_LIST_RETRY(opts.signal),
      );
      if (answer.metadata?.continue) {
        opts.onNotice?.(`${plural} not read ahead: more than the bound; each run reads its own`, {
          namespace,
          limit,
        });
        return undefined;
      }
      const byName = new Map((answer.items as T[]).map((o) => [o.metadata?.name ?? '', o]));
      return { byName, atMs: opts.monoMs(), taken: new Set() };
    } catch (error) {
      opts.onNotice?.(`${plural} not read ahead: the list failed; each run reads its own`, {
        namespace,
        error: error instanceof Error ? error.message.split('\n')[0] : String(error),
      });
      return undefined;
    }
  };
  const of = oncePerNamespace(opts.checksPerNamespace, list);
  return { of: (namespace) => of(namespace) ?? Promise.resolve(undefined) };
}

/** make(namespace, its check count) once for each namespace of the batch; undefined for any other. */
function oncePerNamespace<T>(
  checksPerNamespace: ReadonlyMap<string, number>,
  make: (namespace: string, count: number) => T,
): (namespace: string) => T | undefined {
  const made = new Map<string, T>();
  return (namespace) => {
    const count = checksPerNamespace.get(namespace);
    if (count === undefined) return undefined;
    if (!made.has(namespace)) made.set(namespace, make(namespace, count));
    return made.get(namespace);
  };
}
