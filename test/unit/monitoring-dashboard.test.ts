import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  concreteQuery,
  dashboardQueries,
  exportedSeriesNames,
  metricNamesOf,
  variableSelectors,
} from '../helpers/promql.ts';

// The chart's Grafana dashboard (infra/helm/khrun/dashboards/khrun.json, the ConfigMap of
// templates/dashboard.yaml): JSON Grafana loads, every query PromQL, and every metric it queries one that
// khrun's /metrics writes (read from lib/status, so a renamed or dropped family fails here).
// test/integration/monitoring.test.ts runs the same queries on a real Prometheus scraping `khrun serve`.

const root = join(import.meta.dirname, '../..');
const read = async () =>
  JSON.parse(await readFile(join(root, 'infra/helm/khrun/dashboards/khrun.json'), 'utf8')) as {
    uid: string;
    title: string;
    panels: Array<{ id: number; title: string; datasource?: { uid?: string }; gridPos: object }>;
    templating: { list: Array<{ name: string; query?: unknown }> };
  };

describe('the Grafana dashboard', () => {
  it('parses, and every panel has a title, a unique id, a place and the dashboard data source', async () => {
    const dashboard = await read();
    expect(dashboard.uid).toBe('khrun');
    expect(dashboard.panels.length).toBeGreaterThan(5);
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of dashboard.panels) {
      expect(panel.title, JSON.stringify(panel.id)).toMatch(/\S/);
      expect(panel.gridPos).toBeDefined();
      expect(panel.datasource?.uid, panel.title).toBe(`\${datasource}`);
    }
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(['datasource', 'job', 'namespace']);
  });

  it('every query is PromQL, selects job $job, and queries only metrics khrun exports', async () => {
    const dashboard = await read();
    const exported = await exportedSeriesNames();
    // Read from lib: the families renderMetrics declares, v2's among them.
    expect(exported).toContain('kuberhealthy_check');
    expect(exported).toContain('kuberhealthy_check_run_duration_seconds_bucket');
    const queries = dashboardQueries(dashboard);
    expect(queries.length).toBeGreaterThan(10);
    const used = new Set<string>();
    for (const { panel, expr } of queries) {
      const names = metricNamesOf(concreteQuery(expr));
      expect(names.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) {
        expect(exported.has(name), `${panel} queries ${name}, which khrun does not export`).toBe(true);
        used.add(name);
      }
      // Each selector names the job: Kuberhealthy's series of the same names (a migration) stay out.
      const selectors = expr.match(/[a-z_]+\{[^}]*\}/g) ?? [];
      expect(selectors.length, `${panel}: ${expr}`).toBeGreaterThanOrEqual(names.length);
      for (const selector of selectors) expect(selector, panel).toContain('job=~"$job"');
    }
    for (const { variable, selector } of variableSelectors(dashboard)) {
      for (const name of metricNamesOf(concreteQuery(selector)))
        expect(exported.has(name), `variable ${variable} reads ${name}`).toBe(true);
    }
    // What the dashboard is for: results, errors, staleness, durations, outcomes, the tick.
    expect([...used].sort()).toEqual(
      expect.arrayContaining([
        'kuberhealthy_check',
        'kuberhealthy_check_consecutive_failures',
        'kuberhealthy_check_last_dispatch_timestamp_seconds',
        'kuberhealthy_check_last_run_timestamp_seconds',
        'kuberhealthy_check_outcomes_total',
        'kuberhealthy_check_run_duration_seconds_bucket',
        'kuberhealthy_check_run_interval_seconds',
        'kuberhealthy_check_timeout_seconds',
      ]),
    );
  });

  it('the query reader refuses what is not PromQL and names no function or label as a metric', () => {
    expect(() => metricNamesOf('sum(rate(x[5m])')).toThrow(/not PromQL/);
    expect(() => metricNamesOf('kuberhealthy_check{job=~"$job"}')).not.toThrow();
    expect(
      metricNamesOf(
        'histogram_quantile(0.95, max by (le, namespace) (increase(a_bucket{job="k"}[1h]))) / on (namespace) b',
      ),
    ).toEqual(['a_bucket', 'b']);
    expect(concreteQuery('rate(x{job=~"$job"}[$__rate_interval])')).toBe('rate(x{job=~"khrun"}[5m])');
  });
});
