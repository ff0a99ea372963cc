import type { KubeConfig } from '@kubernetes/client-node';
import { type Limiter, limiter } from '../core/limit.ts';

/**
 * The most API requests a runner process has in flight at once (watches not counted: they hold a
 * connection, not a seat). A batch runner starts 25 checks together, each with a few reads, a claim and a
 * pod create; 40 runners doing that at once (1,000 due checks) offered the local API server thousands of
 * requests in the same seconds, and its priority and fairness refused them with 429 (every runner shares one
 * ServiceAccount, so one flow's queues). client-go bounds a client the same way (QPS 5, burst 10): the
 * checks of a batch take turns, and the API server sees 8 of them at a time from each runner.
 */
export const RUNNER_REQUESTS_IN_FLIGHT = 8;

const limits = new WeakMap<KubeConfig, Limiter>();

/**
 * Bounds the requests sent with this KubeConfig (one runner process's) to max in flight; the rest queue. A
 * second session on the same KubeConfig (serve runs one per triggered run) shares the bound already set.
 */
export function limitRequests(kc: KubeConfig, max: number): void {
  if (!limits.has(kc)) limits.set(kc, limiter(max));
}

/** Sends through the KubeConfig's bound, if it has one. */
export function withinRequestLimit<T>(kc: KubeConfig, send: () => Promise<T>): Promise<T> {
  const limit = limits.get(kc);
  return limit ? limit(send) : send();
}

/** Requests of this KubeConfig in flight now (for tests). */
export function requestsInFlight(kc: KubeConfig): number {
  return limits.get(kc)?.active ?? 0;
}
