import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { CHECK_PATH } from '../healthcheck/check-url.ts';
import { CLUSTER_QUERY, splitClusterPath } from '../report/cluster-path.ts';

/** Which cluster a report to a function serving several is for, and the event as one cluster's endpoint takes it. */
export type ReportClusterRoute =
  | { ok: true; cluster: string; event: APIGatewayProxyEventV2 }
  | { ok: false; response: APIGatewayProxyStructuredResultV2 };

const notFound = (body: string): ReportClusterRoute => ({
  ok: false,
  response: {
    statusCode: 404,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
    body: `${body}\n`,
  },
});

/**
 * The cluster a report names (report/cluster-path.ts): v2's `/clusters/<cluster>/externalCheckStatus...`
 * (the event handed on without the prefix), v3's `/check?cluster=<cluster>` (handed on as it is). A report
 * that names none, or a cluster not among `clusters`, is answered 404 at once, before any API request. Pure.
 */
export function routeReportToCluster(
  event: APIGatewayProxyEventV2,
  clusters: readonly string[],
): ReportClusterRoute {
  const path = event.rawPath ?? event.requestContext?.http?.path ?? '/';
  let cluster: string | undefined;
  let rest = path;
  if (path === CHECK_PATH) {
    cluster = new URLSearchParams(event.rawQueryString ?? '').get(CLUSTER_QUERY) ?? undefined;
  } else {
    ({ cluster, path: rest } = splitClusterPath(path));
  }
  if (cluster === undefined || cluster === '') {
    return notFound(
      `not found: this report endpoint serves the clusters ${clusters.join(', ')}; POST to the KH_REPORTING_URL the checker pod was given, unchanged`,
    );
  }
  if (!clusters.includes(cluster)) {
    return notFound(`not found: no cluster ${JSON.stringify(cluster.slice(0, 100))} is served here`);
  }
  if (rest === path) return { ok: true, cluster, event };
  const http = event.requestContext?.http;
  return {
    ok: true,
    cluster,
    event: {
      ...event,
      rawPath: rest,
      requestContext: { ...event.requestContext, ...(http ? { http: { ...http, path: rest } } : {}) },
    },
  };
}
