import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { abortableDelay } from '../core/abort.ts';
import { Backoff } from '../core/backoff.ts';
import { redactUrlQueries, statusCodeOf } from './errors.ts';
import { type KubeClient, kubeClient } from './kube-client.ts';
import {
  kubeListWatchTransport,
  type ListWatchTransport,
  type Selectors,
  type WatchObject,
} from './list-watch-transport.ts';

export interface ListWatchOptions<T extends KubernetesObject> {
  /**
   * The API server: a client object (lists within its bound, feeding its clock), or a KubeConfig (a client
   * object of its own, unbounded: tests and tools that watch on the side). Unused when transport is given.
   */
  kc?: KubeConfig | KubeClient;
  /** Collection path, e.g. /api/v1/namespaces/ns/pods or /apis/comcast.github.io/v1/namespaces/ns/khstates. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  signal: AbortSignal;
  /** Called with the full current set after the first list and after every change, and the resourceVersion it is current at. */
  onChange: (items: ReadonlyMap<string, T>, resourceVersion: string | undefined) => void;
  /** Called when the watch broke and is being re-established (the set may be stale meanwhile). */
  onInterruption?: (reason: string) => void;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Waits out a back-off; resolves early or rejects when the signal aborts. Default: a timer. */
  delay?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Where lists and watches go. Default: kc's API server. */
  transport?: ListWatchTransport<T>;
  /**
   * A list the caller made already (same path and selectors), with the resourceVersion it is current at:
   * the first watch starts there instead of listing again. Its items are delivered first, as a list's are.
   */
  from?: { items: T[]; resourceVersion: string };
}

function defaultTransport<T extends KubernetesObject>(kc: ListWatchOptions<T>['kc']): ListWatchTransport<T> {
  if (!kc) throw new TypeError('runListWatch: give kc or transport');
  return kubeListWatchTransport<T>(kc instanceof KubeConfig ? kubeClient(kc) : kc);
}

type WatchEnd = { kind: 'closed' } | { kind: 'gone' } | { kind: 'error'; error: unknown };

/** The watched set and the resourceVersion it is current at (undefined: list before watching). */
interface Cursor<T> {
  items: Map<string, T>;
  resourceVersion: string | undefined;
}

const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/**
 * Keeps a set of objects current by list-then-watch, the informer pattern, until the signal aborts:
 * a watch the server closes is resumed from the last resourceVersion, a 410 Gone triggers a fresh list,
 * and an unreachable API server is retried with capped exponential backoff (reset by the next event).
 * Never polls on a timer. Leaves no listener on the signal behind, however often it reconnects.
 */
export async function runListWatch<T extends KubernetesObject>(opts: ListWatchOptions<T>): Promise<void> {
  const transport = opts.transport ?? defaultTransport<T>(opts.kc);
  const delay = opts.delay ?? abortableDelay;
  const backoff = new Backoff({ initialMs: opts.initialBackoffMs ?? 100, maxMs: opts.maxBackoffMs ?? 5_000 });
  const selectors: Selectors = { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector };
  const cursor: Cursor<T> = {
    items: new Map((opts.from?.items ?? []).map((o) => [keyOf(o), o])),
    resourceVersion: opts.from?.resourceVersion,
  };
  if (opts.from && !opts.signal.aborted) opts.onChange(cursor.items, cursor.resourceVersion);

  while (!opts.signal.aborted) {
    try {
      if (cursor.resourceVersion === undefined) {
        const list = await transport.list(opts.path, selectors, opts.signal);
        cursor.items = new Map(list.items.map((o) => [keyOf(o), o]));
        cursor.resourceVersion = list.metadata?.resourceVersion;
        opts.onChange(cursor.items, cursor.resourceVersion);
      }
      const end = await watchOnce(transport, opts, selectors, cursor, () => backoff.reset());
      if (opts.signal.aborted) return;
      if (end.kind === 'closed') continue;
      if (end.kind === 'gone') {
        cursor.resourceVersion = undefined;
        opts.onInterruption?.('resourceVersion expired (410 Gone); listing again');
        continue;
      }
      throw end.error;
    } catch (error) {
      if (opts.signal.aborted) return;
      if (statusCodeOf(error) === 410) cursor.resourceVersion = undefined;
      opts.onInterruption?.(
        `watch of ${opts.path} interrupted: ${describe(error)}; retrying in ${backoff.peek()} ms`,
      );
      await delay(backoff.next(), opts.signal).catch(() => undefined);
    }
  }
}

/**
 * One watch request from the cursor's resourceVersion until it ends; every event moves the cursor, and every
 * change is delivered. The abort listener is added before the request and removed after it ended, whatever
 * the order in which the transport returns its handle and reports the end: one added after a request that
 * had already failed would never be removed, one more per reconnect (MaxListenersExceededWarning).
 */
async function watchOnce<T extends KubernetesObject>(
  transport: ListWatchTransport<T>,
  opts: Pick<ListWatchOptions<T>, 'path' | 'signal' | 'onChange'>,
  selectors: Selectors,
  cursor: Cursor<T>,
  onEvent: () => void,
): Promise<WatchEnd> {
  let request: { abort(): void } | undefined;
  let ended = false;
  const onAbort = () => request?.abort();
  opts.signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await new Promise<WatchEnd>((resolve) => {
      const finish = (end: WatchEnd) => {
        if (ended) return;
        ended = true;
        request?.abort();
        resolve(end);
      };
      const query = { ...selectors, resourceVersion: cursor.resourceVersion, allowWatchBookmarks: true };
      const onWatchEvent = (type: string, obj: WatchObject<T>) => {
        if (ended) return;
        if (type === 'ERROR') finish(obj.code === 410 ? { kind: 'gone' } : { kind: 'error', error: obj });
        else if (applyEvent(cursor, type, obj)) {
          onEvent();
          opts.onChange(cursor.items, cursor.resourceVersion);
        }
      };
      const onDone = (error: unknown) => {
        if (!error) finish({ kind: 'closed' });
        else finish(statusCodeOf(error) === 410 ? { kind: 'gone' } : { kind: 'error', error });
      };
      transport.watch(opts.path, query, onWatchEvent, onDone).then(
        (handle) => {
          request = handle;
          if (ended || opts.signal.aborted) handle.abort();
        },
        (error: unknown) => finish({ kind: 'error', error }),
      );
    });
  } finally {
    opts.signal.removeEventListener('abort', onAbort);
  }
}

/** Moves the cursor by one event; true when the set changed (a bookmark only moves the resourceVersion). */
function applyEvent<T extends KubernetesObject>(cursor: Cursor<T>, type: string, obj: T): boolean {
  const rv = obj.metadata?.resourceVersion;
  if (rv) cursor.resourceVersion = rv;
  if (type === 'BOOKMARK') return false;
  const key = keyOf(obj);
  if (type !== 'ADDED' && isStale(cursor.items.get(key), obj)) return false;
  if (type === 'DELETED') cursor.items.delete(key);
  else cursor.items.set(key, obj);
  return true;
}

/**
 * Whether a MODIFIED or DELETED event is about an earlier object of the name than the one the set holds.
 * In one watch stream that cannot happen (an object's last event comes before its successor's ADDED), but
 * a set seeded with objects created after its list (`from`) may hold the successor first: an adopted run's
 * replacement pod, created under the name of the finished pod it replaced, must not go with that pod's
 * DELETED event.
 */
function isStale(held: KubernetesObject | undefined, event: KubernetesObject): boolean {
  const heldUid = held?.metadata?.uid;
  const eventUid = event.metadata?.uid;
  return heldUid !== undefined && eventUid !== undefined && heldUid !== eventUid;
}

/** The failure as text, for onInterruption (which callers log): request URLs lose their query strings. */
function describe(error: unknown): string {
  if (error instanceof Error) return redactUrlQueries(error.message);
  try {
    return redactUrlQueries(JSON.stringify(error));
  } catch {
    return redactUrlQueries(String(error));
  }
}

/**
 * Resolves with the first non-undefined value of decide(items), evaluated on every change of the watched
 * set; rejects with a clear message when timeoutMs passes or the signal aborts.
 */
export async function waitForSet<T extends KubernetesObject, R>(
  opts: Omit<ListWatchOptions<T>, 'onChange' | 'signal'> & {
    decide: (items: ReadonlyMap<string, T>) => R | undefined;
    timeoutMs: number;
    description: string;
    signal?: AbortSignal;
  },
): Promise<R> {
  const stop = new AbortController();
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = AbortSignal.any([stop.signal, timeout, ...(opts.signal ? [opts.signal] : [])]);
  let result: { value: R } | undefined;
  let last: ReadonlyMap<string, T> = new Map();
  await runListWatch<T>({
    ...opts,
    signal,
    onChange: (items) => {
      last = items;
      if (result) return;
      const value = opts.decide(items);
      if (value !== undefined) {
        result = { value };
        stop.abort();
      }
    },
  });
  if (result) return result.value;
  if (timeout.aborted) {
    const seen = [...last.values()].map((o) => JSON.stringify(o.metadata?.name)).join(', ');
    throw new Error(
      `timed out after ${opts.timeoutMs} ms waiting for ${opts.description} (last seen: ${seen || 'nothing'})`,
    );
  }
  throw opts.signal?.reason ?? new Error(`stopped waiting for ${opts.description}`);
}
