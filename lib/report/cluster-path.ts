/**
 * One report endpoint for several clusters (the report Lambda with KHRUN_CLUSTERS): a checker pod's
 * reporting URL names its cluster. v2's path carries it as a prefix, `/clusters/<cluster>/externalCheckStatus/...`
 * (v2's clients POST to KH_REPORTING_URL as they find it); v3's client takes no path but `/check`, so there it
 * rides in the query, `/check?cluster=<cluster>&khrun=...` (healthcheck/check-url.ts). The run UUID in the URL
 * still fences the run: a URL of one cluster's run names no run of another's.
 */
export const CLUSTER_PREFIX = '/clusters/';
/** The query parameter of v3's /check URL that names the cluster. */
export const CLUSTER_QUERY = 'cluster';

/** The URL with `/clusters/<cluster>` put before its path: `https://h/externalCheckStatus` → `https://h/clusters/a/externalCheckStatus`. */
export function clusterReportUrl(url: string, cluster: string): string {
  const u = new URL(url);
  u.pathname = `${CLUSTER_PREFIX}${encodeURIComponent(cluster)}${u.pathname === '/' ? '' : u.pathname}`;
  return u.toString();
}

/** The cluster a path's prefix names (decoded), and the path without it; none: the path as it is. Pure. */
export function splitClusterPath(path: string): { cluster: string | undefined; path: string } {
  if (!path.startsWith(CLUSTER_PREFIX)) return { cluster: undefined, path };
  const rest = path.slice(CLUSTER_PREFIX.length);
  const slash = rest.indexOf('/');
  const raw = slash === -1 ? rest : rest.slice(0, slash);
  let cluster: string;
  try {
    cluster = decodeURIComponent(raw);
  } catch {
    return { cluster: undefined, path };
  }
  return { cluster, path: slash === -1 ? '/' : rest.slice(slash) };
}
