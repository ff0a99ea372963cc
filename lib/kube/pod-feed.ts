import type { V1Pod } from '@kubernetes/client-node';
import { CHECK_NAME_LABEL } from '../check/pod-builder.ts';
import { isRunPod, runIdOf } from '../check/run-label.ts';
import { runListWatch } from './list-watch.ts';
import type { ListWatchTransport } from './list-watch-transport.ts';
import type { ListedPods } from './port.ts';
import { retryTransient } from './transient.ts';

/**
 * One list-and-watch of a namespace's checker pods (every pod with the kuberhealthy-check-name label),
 * shared by the runs of one batch in that namespace: a batch of 25 checks makes one list and one watch
 * there instead of 25 of each. It holds every checker pod of the namespace, so it declines a namespace
 * holding more than its bound (its first list is a page of `limit`): the runs there list and watch their own.
 */
export interface PodFeed {
  /**
   * The check's pods as the feed holds them, current at the resourceVersion given; undefined when the feed
   * declined the namespace or its first list failed (the caller then lists for itself). Waits for the first list.
   */
  checkPods(checkName: string): Promise<ListedPods | undefined>;
  /**
   * Calls onChange with the run's pods (run-id label) at once and on every change of the namespace's checker
   * pods, until signal aborts; onInterruption when the feed's watch broke (the view may be stale meanwhile).
   * seed: pods this run created, held in the view until the feed has seen each (a create's answer may arrive
   * before the watch event), so a pod of this run never looks deleted before the feed saw it. Resolves false
   * at once when the feed declined the namespace (the caller watches for itself), else true once aborted.
   */
  watchRunPods(opts: {
    runUuid: string;
    signal: AbortSignal;
    seed: readonly V1Pod[];
    onChange: (pods: V1Pod[]) => void;
    onInterruption?: (reason: string) => void;
  }): Promise<boolean>;
}

export interface PodFeedOptions {
  namespace: string;
  transport: ListWatchTransport<V1Pod>;
  /** At most this many checker pods in the namespace, else the feed declines it. */
  limit: number;
  /** The feed's life: the batch's session. Its watch ends when this aborts. */
  signal: AbortSignal;
  /** Why the feed declined or broke, for the runner's log. */
  onNotice?: (message: string, fields: Record<string, unknown>) => void;
}

/**
 * A batch's shared first lists are tried again after a 429 for 30 s and after a 5xx for 15 s (a thousand
 * checks' runners start at once, and the API server's priority and fairness sheds some of their first
 * requests): given up, every run of the namespace reads for itself, a list and a watch each.
 */
export const SHARED_LIST_RETRY = (signal: AbortSignal) => ({ totalMs: 15_000, throttledMs: 30_000, signal });

interface Subscriber {
  runUuid: string;
  deliver(items: ReadonlyMap<string, V1Pod>): void;
  interrupted(reason: string): void;
}

/**
 * The feed's first list: from the API server's watch cache (resourceVersion 0), as an informer's is. Every
 * run of the batch in the namespace waits for it before its pod create, and a consistent read of pods waits
 * for that cache to catch up with etcd: 5.5 s a list (median) while a fleet of 1,000 checks started (the
 * fleet section, audit log), where the claims before it took 0.3 s. A view a moment old is made current by
 * the watch from its resourceVersion; a run's own pods are held in its view until the feed saw them (seed).
 */
const FIRST_LIST = (limit: number) =>
  ({ labelSelector: CHECK_NAME_LABEL, limit, resourceVersion: '0' }) as const;

/** The pods of the feed's set that belong to a check. */
const ofCheck = (items: ReadonlyMap<string, V1Pod>, checkName: string) =>
  [...items.values()].filter((p) => p.metadata?.labels?.[CHECK_NAME_LABEL] === checkName);

const uidOf = (p: V1Pod) => p.metadata?.uid ?? `${p.metadata?.namespace}/${p.metadata?.name}`;

/**
 * The runs (run-id labels) with a pod added, changed or removed between two views of the feed. A run is
 * told only of its own pods' changes: with every event sent to every run, a batch of 50 spent a twelfth of
 * its runner's CPU filtering the namespace's pods and deciding again for runs whose pods had not changed
 * (the fleet section at 1,000 checks, runners profiled). Pure.
 */
export function changedRuns(
  before: ReadonlyMap<string, V1Pod>,
  after: ReadonlyMap<string, V1Pod>,
): Set<string | undefined> {
  const runs = new Set<string | undefined>();
  for (const [key, pod] of after) if (before.get(key) !== pod) runs.add(runIdOf(pod));
  for (const [key, pod] of before) if (!after.has(key)) runs.add(runIdOf(pod));
  return runs;
}

/** A namespace's pod feed; nothing is sent until a run first asks (checkPods or watchRunPods). */
export function podFeed(opts: PodFeedOptions): PodFeed {
  const path = `/api/v1/namespaces/${opts.namespace}/pods`;
  let items: ReadonlyMap<string, V1Pod> = new Map();
  let resourceVersion: string | undefined;
  const subscribers = new Set<Subscriber>();
  /** The items as last delivered: the watch updates its map in place, so changes are found by object. */
  let seen: ReadonlyMap<string, V1Pod> = new Map();
  let started: Promise<boolean> | undefined;

  const start = (): Promise<boolean> => {
    started ??= (async () => {
      let first: Awaited<ReturnType<typeof opts.transport.list>>;
      try {
        first = await retryTransient(
          () => opts.transport.list(path, FIRST_LIST(opts.limit), opts.signal),
          SHARED_LIST_RETRY(opts.signal),
        );
      } catch (error) {
        opts.onNotice?.('pod feed not started: its first list failed; each run lists its own', {
          namespace: opts.namespace,
          error: error instanceof Error ? error.message.split('\n')[0] : String(error),
        });
        return false;
      }
      // A list from the watch cache may leave limit unheeded: more items than the bound decline as well.
      if (first.metadata?.continue || first.items.length > opts.limit || !first.metadata?.resourceVersion) {
        opts.onNotice?.('pod feed declined: more checker pods than its bound; each run lists its own', {
          namespace: opts.namespace,
          limit: opts.limit,
        });
        return false;
      }
      // The watch runs until the session's signal aborts (its errors are retried inside runListWatch); it
      // delivers the first list's items before it returns to here.
      void runListWatch<V1Pod>({
        transport: opts.transport,
        path,
        labelSelector: CHECK_NAME_LABEL,
        from: { items: first.items, resourceVersion: first.metadata.resourceVersion },
        signal: opts.signal,
        onChange: (next, rv) => {
          const changed = changedRuns(seen, next);
          seen = new Map(next);
          items = next;
          resourceVersion = rv;
          for (const s of subscribers) if (changed.has(s.runUuid)) s.deliver(next);
        },
        onInterruption: (reason) => {
          for (const s of subscribers) s.interrupted(reason);
        },
      }).catch(() => undefined);
      return true;
    })();
    return started;
  };

  return {
    async checkPods(checkName) {
      if (!(await start())) return undefined;
      return { pods: ofCheck(items, checkName), resourceVersion };
    },
    async watchRunPods({ runUuid, signal, seed, onChange, onInterruption }) {
      if (!(await start())) return false;
      if (signal.aborted) return true;
      const pending = new Map(seed.map((p) => [uidOf(p), p]));
      const subscriber: Subscriber = {
        runUuid,
        deliver(current) {
          const pods = [...current.values()].filter((p) => isRunPod(p, runUuid));
          for (const p of pods) pending.delete(uidOf(p));
          onChange([...pods, ...pending.values()]);
        },
        interrupted: (reason) => onInterruption?.(reason),
      };
      subscribers.add(subscriber);
      subscriber.deliver(items);
      await new Promise<void>((resolve) => {
        const end = () => {
          subscribers.delete(subscriber);
          opts.signal.removeEventListener('abort', end);
          signal.removeEventListener('abort', end);
          resolve();
        };
        signal.addEventListener('abort', end, { once: true });
        opts.signal.addEventListener('abort', end, { once: true });
        if (signal.aborted || opts.signal.aborted) end();
      });
      return true;
    },
  };
}
