import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * A route of the shared listener: handles the request and returns true, or returns false to let the next
 * route (finally the 404) have it. The status routes of lib/status plug in through this shape.
 */
export type Route = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

/** Tries each route in order; the first that claims the request wins. */
export function chainRoutes(routes: readonly Route[]): Route {
  return async (req, res) => {
    for (const route of routes) if (await route(req, res)) return true;
    return false;
  };
}

export interface HealthState {
  /** False once shutdown began: load balancers stop sending new requests while in-flight ones finish. */
  ready(): boolean;
}

/**
 * Liveness and readiness, as Kubernetes probes expect them: /healthz answers 200 while the process can
 * serve at all; /readyz answers 503 from the moment shutdown begins. Neither calls the API server, so an
 * API outage does not restart or unroute every server at once (reports then fail with 500 and are retried).
 */
export function healthRoutes(state: HealthState): Route {
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://health.invalid').pathname;
    if (path !== '/healthz' && path !== '/readyz' && path !== '/livez') return false;
    const ok = path === '/readyz' ? state.ready() : true;
    res.writeHead(ok ? 200 : 503, {
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
    });
    res.end(ok ? 'ok\n' : 'shutting down\n');
    return true;
  };
}
