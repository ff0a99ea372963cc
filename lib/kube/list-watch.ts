import { type KubeConfig, type KubernetesObject, Watch } from '@kubernetes/client-node';
import { abortableDelay } from '../core/abort.ts';
import { redactUrlQueries } from './errors.ts';
import { getJson } from './rest.ts';

export interface ListWatchOptions<T extends KubernetesObject> {
  kc: KubeConfig;
  /** Collection path, e.g. /api/v1/namespaces/ns/pods or /apis/comcast.github.io/v1/namespaces/ns/khstates. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  signal: AbortSignal;
  /** Called with the full current set after the first list and after every change. */
  onChange: (items: ReadonlyMap<string, T>) => void;
  /** Called when the watch broke and is being re-established (the set may be stale meanwhile). */
  onInterruption?: (reason: string) => void;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

interface ListResult<T> {
  metadata?: { resourceVersion?: string };
  items: T[];
}

type WatchEnd = { kind: 'closed' } | { kind: 'gone' } | { kind: 'error'; error: unknown };

const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/**
 * Keeps a set of objects current by list-then-watch, the informer pattern, until the signal aborts:
 * a watch the server closes is resumed from the last resourceVersion, a 410 Gone triggers a fresh list,
 * and an unreachable API server is retried with capped exponential backoff. Never polls on a timer.
 */
export async function runListWatch<T extends KubernetesObject>(opts: ListWatchOptions<T>): Promise<void> {
  const watch = new Watch(opts.kc);
  const initialMs = opts.initialBackoffMs ?? 100;
  const maxMs = opts.maxBackoffMs ?? 5_000;
  let backoffMs = initialMs;
  let items = new Map<string, T>();
  let resourceVersion: string | undefined;
  const selectors = { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector };

  while (!opts.signal.aborted) {
    try {
      if (resourceVersion === undefined) {
        const list = await getJson<ListResult<T>>(opts.kc, opts.path, selectors, opts.signal);
        items = new Map(list.items.map((o) => [keyOf(o), o]));
        resourceVersion = list.metadata?.resourceVersion;
        opts.onChange(items);
      }
      const end = await new Promise<WatchEnd>((resolve) => {
        let settled = false;
        const finish = (e: WatchEnd) => {
          if (!settled) {
            settled = true;
            resolve(e);
          }
        };
        let controller: AbortController | undefined;
        const onAbort = () => controller?.abort();
        watch
          .watch(
            opts.path,
            { ...selectors, resourceVersion, allowWatchBookmarks: true },
            (type: string, obj: T & { code?: number }) => {
              if (type === 'ERROR') {
                finish(obj.code === 410 ? { kind: 'gone' } : { kind: 'error', error: obj });
                controller?.abort();
                return;
              }
              const rv = obj.metadata?.resourceVersion;
              if (rv) resourceVersion = rv;
              if (type === 'BOOKMARK') return;
              backoffMs = initialMs;
              if (type === 'DELETED') items.delete(keyOf(obj));
              else items.set(keyOf(obj), obj);
              opts.onChange(items);
            },
            (err: unknown) => {
              opts.signal.removeEventListener('abort', onAbort);
              if (!err) finish({ kind: 'closed' });
              else if ((err as { statusCode?: number }).statusCode === 410) finish({ kind: 'gone' });
              else finish({ kind: 'error', error: err });
            },
          )
          .then(
            (c) => {
              controller = c;
              if (opts.signal.aborted) c.abort();
              else opts.signal.addEventListener('abort', onAbort, { once: true });
            },
            (error: unknown) => finish({ kind: 'error', error }),
          );
      });
      if (opts.signal.aborted) return;
      if (end.kind === 'closed') continue;
      if (end.kind === 'gone') {
        resourceVersion = undefined;
        opts.onInterruption?.('resourceVersion expired (410 Gone); listing again');
        continue;
      }
      throw end.error;
    } catch (error) {
      if (opts.signal.aborted) return;
      const status = (error as { statusCode?: number }).statusCode;
      if (status === 410) resourceVersion = undefined;
      opts.onInterruption?.(
        `watch of ${opts.path} interrupted: ${describe(error)}; retrying in ${backoffMs} ms`,
      );
      await abortableDelay(backoffMs, opts.signal).catch(() => undefined);
      backoffMs = Math.min(backoffMs * 2, maxMs);
    }
  }
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
