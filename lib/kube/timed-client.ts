import { type HttpLibrary, Observable } from '@kubernetes/client-node';
import type { ServerClock } from './server-clock.ts';

/**
 * Wraps client-node's HTTP library so that every response, error statuses included, feeds the clock:
 * the time the request left, the time its headers arrived, and its `Date`. (A middleware sees requests
 * and responses apart and cannot pair them; the library's send can.) Each request, its body included, is
 * sent within `bound` (the client's requests-in-flight limit, kube/kube-client.ts).
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
