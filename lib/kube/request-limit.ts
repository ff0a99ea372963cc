/**
 * The most API requests a runner process has in flight at once (watches not counted: they hold a connection,
 * not a seat). A batch runner starts its checks together, each with a few reads, a claim and a pod create;
 * many runners doing that at once offer the API server thousands of requests in the same seconds, and its
 * priority and fairness refuses them with 429 (every runner shares one ServiceAccount, so one flow's queues).
 * client-go bounds a client the same way (QPS 5, burst 10): the checks of a batch take turns, and the API
 * server sees 8 of them at a time from each runner. A runner's client object is made with this bound
 * (kube-client.ts, maxInFlight).
 */
export const RUNNER_REQUESTS_IN_FLIGHT = 8;
