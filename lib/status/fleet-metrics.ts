/**
 * The metrics of several clusters as one Prometheus text exposition: each cluster's own exposition
 * (metrics.ts, unchanged) with a `cluster` label on every sample, the families merged so that each is
 * written once (its HELP and TYPE, then every cluster's samples), as the text format requires. A cluster
 * that could not be read has no samples but `khrun_cluster_up{cluster="..."} 0`.
 */

/** The gauge that says whether a cluster could be read for this scrape (1) or not (0), like Prometheus' `up`. */
export const CLUSTER_UP = 'khrun_cluster_up';
export const CLUSTER_LABEL = 'cluster';

interface Family {
  name: string;
  /** The `# HELP` and `# TYPE` lines, as the first exposition that had the family wrote them. */
  head: string[];
  samples: string[];
}

/** A label value as the text format writes it: backslash, double quote and newline escaped. */
export function labelValue(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** One sample line with `cluster="..."` as its first label. */
export function withClusterLabel(sample: string, cluster: string): string {
  const label = `${CLUSTER_LABEL}="${labelValue(cluster)}"`;
  const brace = sample.indexOf('{');
  const space = sample.indexOf(' ');
  if (brace !== -1 && (space === -1 || brace < space)) {
    const rest = sample.slice(brace + 1);
    return `${sample.slice(0, brace)}{${label}${rest.startsWith('}') ? '' : ','}${rest}`;
  }
  return space === -1 ? `${sample}{${label}}` : `${sample.slice(0, space)}{${label}}${sample.slice(space)}`;
}

/** The family a HELP or TYPE line names. */
const familyOf = (line: string) => line.split(' ')[2] ?? '';

/** Adds one exposition's families and samples (labelled with cluster) to families, in order of appearance. */
function addExposition(families: Map<string, Family>, text: string, cluster: string): void {
  let current: Family | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      const name = familyOf(line);
      current = families.get(name);
      if (!current) {
        current = { name, head: [], samples: [] };
        families.set(name, current);
      }
      if (current.head.length < 2 && !current.head.some((h) => h.slice(0, 6) === line.slice(0, 6)))
        current.head.push(line);
      continue;
    }
    if (line.startsWith('#') || !current) continue;
    current.samples.push(withClusterLabel(line, cluster));
  }
}

/**
 * The merged exposition: the clusters' expositions in order, then khrun_cluster_up for every cluster (1 for
 * those read, 0 for the others). Families first seen in a later cluster come after the earlier ones'.
 */
export function mergeClusterMetrics(
  clusters: ReadonlyArray<
    { cluster: string; exposition: string } | { cluster: string; exposition: undefined }
  >,
): string {
  const families = new Map<string, Family>();
  for (const c of clusters) if (c.exposition !== undefined) addExposition(families, c.exposition, c.cluster);
  families.set(CLUSTER_UP, {
    name: CLUSTER_UP,
    head: [
      `# HELP ${CLUSTER_UP} Whether khrun could read the cluster's checks for this scrape (1) or not (0)`,
      `# TYPE ${CLUSTER_UP} gauge`,
    ],
    samples: clusters.map(
      (c) =>
        `${CLUSTER_UP}{${CLUSTER_LABEL}="${labelValue(c.cluster)}"} ${c.exposition === undefined ? 0 : 1}`,
    ),
  });
  return `${[...families.values()].map((f) => [...f.head, ...f.samples].join('\n')).join('\n\n')}\n`;
}
