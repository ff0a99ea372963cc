import { parser } from '@prometheus-io/lezer-promql';
import { renderMetrics } from '../../lib/status/metrics.ts';
import { parsePromText } from './prom-text.ts';

/**
 * PromQL as the tests read it: Prometheus' own grammar (@prometheus-io/lezer-promql, the one its UI
 * parses with), the metric names an expression selects, the queries of the chart's Grafana dashboard, and
 * the names khrun exports, read from what lib/status/metrics.ts writes.
 */

/** Grafana's variables in the dashboard's queries, as one concrete query would have them. */
const GRAFANA_VARIABLES: Record<string, string> = {
  $__rate_interval: '5m',
  $__interval: '1m',
  $__range: '1h',
  $job: 'khrun',
  $namespace: '.*',
};

/** A dashboard query with Grafana's variables replaced (longest name first: $__rate_interval before $__r...). */
export function concreteQuery(expr: string): string {
  const names = Object.keys(GRAFANA_VARIABLES).sort((a, b) => b.length - a.length);
  return names.reduce((text, name) => text.split(name).join(GRAFANA_VARIABLES[name]!), expr);
}

/** The metric names an expression selects; throws with the position of the first syntax error. */
export function metricNamesOf(expr: string): string[] {
  const tree = parser.parse(expr);
  const names = new Set<string>();
  let error: number | undefined;
  tree.iterate({
    enter(node) {
      if (node.type.isError && error === undefined) error = node.from;
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') {
        names.add(expr.slice(node.from, node.to));
      }
    },
  });
  if (error !== undefined) {
    throw new Error(`not PromQL at ${error}: ${expr.slice(0, error)}⟨here⟩${expr.slice(error)}`);
  }
  return [...names].sort();
}

interface Panel {
  title?: string;
  type?: string;
  panels?: Panel[];
  targets?: Array<{ expr?: string }>;
}

/** Every panel's queries (rows' panels included), each with its panel's title. */
export function dashboardQueries(dashboard: { panels?: Panel[] }): Array<{ panel: string; expr: string }> {
  const walk = (panels: Panel[] = []): Array<{ panel: string; expr: string }> =>
    panels.flatMap((p) => [
      ...(p.targets ?? []).flatMap((t) => (t.expr ? [{ panel: p.title ?? '(untitled)', expr: t.expr }] : [])),
      ...walk(p.panels),
    ]);
  return walk(dashboard.panels);
}

/** The series selectors of the dashboard's template variables (`label_values(SELECTOR, label)`). */
export function variableSelectors(dashboard: {
  templating?: { list?: Array<{ name: string; query?: unknown }> };
}): Array<{ variable: string; selector: string }> {
  return (dashboard.templating?.list ?? []).flatMap((v) => {
    const query = typeof v.query === 'string' ? v.query : (v.query as { query?: string } | undefined)?.query;
    const m = /^label_values\((.+),\s*[a-zA-Z_]+\)$/.exec(query ?? '');
    return m ? [{ variable: v.name, selector: m[1]! }] : [];
  });
}

/**
 * The series names khrun's /metrics can hold, read from what renderMetrics writes for no checks (every
 * family is declared with its TYPE whether or not it has samples); a histogram's are its _bucket, _sum and
 * _count.
 */
export async function exportedSeriesNames(): Promise<Set<string>> {
  const families = parsePromText(await renderMetrics([], { currentMaster: 'khrun', nowMs: 0 }));
  const names = new Set<string>();
  for (const [name, family] of families) {
    if (family.type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    else names.add(name);
  }
  return names;
}
