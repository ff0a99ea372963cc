import type { KubernetesObject } from '@kubernetes/client-node';
import { isNotFound } from './errors.ts';
import type { ListWatchTransport } from './list-watch-transport.ts';

/**
 * A list-watch transport for a kind whose CRD may not be installed (Kuberhealthy v3's HealthCheck on a
 * v2-only cluster): a list answered 404 is an empty list, so a cache of it is ready (with nothing in it)
 * instead of retrying an error forever, and the watch that follows is a wait of recheckMs that ends as a
 * closed watch, after which runListWatch lists again and finds the CRD once it is installed.
 */
export function missingCrdTransport<T extends KubernetesObject>(
  base: ListWatchTransport<T>,
  recheckMs: number,
): ListWatchTransport<T> {
  const missing = new Set<string>();
  return {
    async list(path, selectors, signal) {
      try {
        const list = await base.list(path, selectors, signal);
        missing.delete(path);
        return list;
      } catch (error) {
        if (!isNotFound(error)) throw error;
        missing.add(path);
        return { items: [] };
      }
    },
    async watch(path, query, onEvent, onDone) {
      if (!missing.has(path)) return base.watch(path, query, onEvent, onDone);
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        clearTimeout(timer);
        onDone(null);
      };
      const timer = setTimeout(end, recheckMs);
      return { abort: end };
    },
  };
}
