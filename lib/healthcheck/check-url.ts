import { CLUSTER_QUERY, splitClusterPath } from '../report/cluster-path.ts';
import {
  parseReportPath,
  type ReportKey,
  type ReportPath,
  type RunRef,
  signedReportUrl,
} from '../report/report-token.ts';

/**
 * Kuberhealthy v3's report path. v3's Go checkclient refuses a KH_REPORTING_URL whose path is anything
 * else, so a signed run cannot ride in the path as on `/externalCheckStatus`; the client posts to the URL
 * as it finds it, query included, so the run and its mac ride in the query instead.
 */
export const CHECK_PATH = '/check';
/** The query parameter holding `/<namespace>/<check>/<run UUID>/<deadline ms>/<mac>` (report-token.ts). */
export const CHECK_TOKEN_PARAM = 'khrun';

/**
 * A report URL's /check twin: v3's client takes no other path, so a configured path prefix is dropped; a
 * cluster's prefix (report/cluster-path.ts) becomes the `cluster` query parameter instead.
 */
export function checkUrlOf(reportUrl: string): string {
  const url = new URL(reportUrl);
  const { cluster } = splitClusterPath(url.pathname);
  url.pathname = CHECK_PATH;
  url.search = '';
  if (cluster !== undefined) url.searchParams.set(CLUSTER_QUERY, cluster);
  return url.toString();
}

/** base: the /check URL as pods reach it (`http://host:port/check`). */
export function signedCheckUrl(base: string, key: ReportKey, run: RunRef): string {
  const url = new URL(base);
  url.searchParams.set(CHECK_TOKEN_PARAM, signedReportUrl('', key, run));
  return url.toString();
}

/** What the query of a /check request says: bare (no token: a v3-style report) or the signed run. */
export function checkTokenPath(search: URLSearchParams): ReportPath {
  const tokens = search.getAll(CHECK_TOKEN_PARAM);
  if (tokens.length === 0) return { kind: 'bare' };
  if (tokens.length > 1 || tokens[0] === '' || tokens[0] === '/')
    return {
      kind: 'malformed',
      reason: `the reporting URL carries ${tokens.length} ${CHECK_TOKEN_PARAM} tokens; POST to KH_REPORTING_URL unchanged`,
    };
  return parseReportPath(tokens[0] ?? '');
}
