import { type ChildProcess, spawn } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { retryWithBackoff } from '../../lib/core/backoff.ts';
import { concreteQuery, dashboardQueries, exportedSeriesNames, metricNamesOf } from '../helpers/promql.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { buildTestBundles } from './helpers/deploy.ts';
import { createCheck, nodeContainer, npmClientEnv, outcomeOf, repoRoot, runKhrun } from './helpers/khrun.ts';
import {
  type MonitoringTools,
  monitoringTools,
  type PromSample,
  promApi,
  promQuery,
  promtool,
  type RunningPrometheus,
  renderedRuleFile,
  startPrometheus,
} from './helpers/prometheus.ts';

// The chart's monitoring with Prometheus' own tools (v3.16.0, built from the Go module proxy through
// infra/build/prometheus, without the web UI's assets): the PrometheusRule's groups pass `promtool check
// rules` and the cases of test/fixtures/monitoring/rules.test.yaml (`promtool test rules`), which fail when a
// rule changes; then a real Prometheus scrapes a real `khrun serve --no-reports` (the kustomization's
// default server) on 127.0.0.1, evaluates the rules, and its API shows khrun's series, an alert firing for
// a failing check of the local cluster, and every dashboard query evaluating.

const kc = adminKubeConfig();
let tools: MonitoringTools;
let dist: string;

beforeAll(async () => {
  const startedMs = Date.now();
  // About 13 minutes for promtool and 15 more for prometheus on 2 busy cores the first time; cached after.
  tools = await monitoringTools((line) => console.log(`[monitoring] ${line}`));
  console.log(`[monitoring] tools ready in ${Math.round((Date.now() - startedMs) / 1000)}s`);
  dist = await buildTestBundles();
}, 3_600_000);

describe("the chart's PrometheusRule under promtool", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'khrun-rules-'));
    await copyFile(join(repoRoot, 'test/fixtures/monitoring/rules.test.yaml'), join(dir, 'rules.test.yaml'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const check = async (set: string[] = []) => {
    await writeFile(join(dir, 'rules.yaml'), await renderedRuleFile(tools.helm, set));
    return {
      check: await promtool(tools.promtool, ['check', 'rules', 'rules.yaml'], dir),
      test: await promtool(tools.promtool, ['test', 'rules', 'rules.test.yaml'], dir),
    };
  };

  it('promtool check rules accepts its groups and promtool test rules passes every case', async () => {
    const { check: checked, test } = await check();
    expect(checked.code, checked.output).toBe(0);
    expect(checked.output).toMatch(/SUCCESS: 5 rules found/);
    expect(test.code, test.output).toBe(0);
    expect(test.output).toMatch(/SUCCESS/);
    // Every metric a rule reads is khrun's, or Prometheus' own `up` of the scrape.
    const exported = await exportedSeriesNames();
    const rules = await readFile(join(dir, 'rules.yaml'), 'utf8');
    const exprs = [...rules.matchAll(/expr: (?:\|-\n((?: {10}.*\n)+)|(.*)\n)/g)].map((m) => m[1] ?? m[2]!);
    expect(exprs).toHaveLength(5);
    for (const expr of exprs)
      for (const name of metricNamesOf(expr)) expect(name === 'up' || exported.has(name), name).toBe(true);
  });

  it.each([
    { set: ['monitoring.rules.failingFor=10m'], fails: 'KhrunCheckFailing' },
    { set: ['monitoring.rules.staleGraceSeconds=200'], fails: 'KhrunCheckStale' },
    { set: ['monitoring.job=kuberhealthy'], fails: 'KhrunNotScraped' },
  ])('the cases fail with $set', async ({ set, fails }) => {
    const { check: checked, test } = await check(set);
    expect(checked.code, checked.output).toBe(0);
    expect(test.code, test.output).toBe(1);
    expect(test.output).toContain(`alertname: ${fails}`);
  });
});

describe('a real Prometheus scraping a real khrun serve', () => {
  let ns: string;
  let dir: string;
  let serve: { child: ChildProcess; base: string; output: () => string } | undefined;
  let prometheus: RunningPrometheus | undefined;

  beforeAll(async () => {
    ns = await freshNamespace(kc, 'monitoring');
    dir = await mkdtemp(join(tmpdir(), 'khrun-prometheus-'));
  });
  afterAll(async () => {
    await prometheus?.stop();
    if (serve && serve.child.exitCode === null) {
      const exited = new Promise((resolve) => serve?.child.once('exit', resolve));
      serve.child.kill('SIGTERM');
      const timer = setTimeout(() => serve?.child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    if (dir) await rm(dir, { recursive: true, force: true });
    await dropNamespace(kc, ns);
  });

  /** `khrun serve --no-reports` of the bundle, scoped to ns, on a free port of 127.0.0.1. */
  async function startServe(): Promise<NonNullable<typeof serve>> {
    const child = spawn(
      process.execPath,
      [join(dist, 'khrun.mjs'), 'serve', '--host', '127.0.0.1', '--port', '0', '--no-reports', '-n', ns],
      {
        env: { ...process.env, KUBECONFIG: inject('kubeconfigPath'), POWERTOOLS_LOG_LEVEL: 'WARN' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    const base = await new Promise<string>((resolve, reject) => {
      child.stdout?.on('data', (c: Buffer) => {
        out += c;
        const m = /status at (http:\/\/\S+)\/, /.exec(out);
        if (m) resolve(m[1]!);
      });
      child.stderr?.on('data', (c: Buffer) => {
        out += c;
      });
      child.once('exit', (code) => reject(new Error(`khrun serve exited (${code}) before serving:\n${out}`)));
    });
    return { child, base, output: () => out };
  }

  /** Polls fn (bounded) until it returns a value: Prometheus has no watch to wait on. */
  const until = <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000) =>
    retryWithBackoff(what, fn, { initialMs: 200, maxMs: 1_000, deadlineEpochMs: Date.now() + timeoutMs });

  it('scrapes the series, fires KhrunCheckFailing for the failing check naming its error, and answers every dashboard query', async () => {
    // Two real checks run once each on the local cluster: one fails, one passes.
    const error = 'the widget endpoint answered 503';
    await createCheck(kc, ns, 'widget', {
      containers: [
        nodeContainer(`require('kuberhealthy').ReportFailure([${JSON.stringify(error)}]);`, {
          env: npmClientEnv,
        }),
      ],
    });
    await createCheck(kc, ns, 'healthy', {
      containers: [nodeContainer("require('kuberhealthy').ReportSuccess();", { env: npmClientEnv })],
    });
    for (const [name, kind] of [
      ['widget', 'Failed'],
      ['healthy', 'Succeeded'],
    ] as const) {
      const result = await runKhrun(['--check', name, '--namespace', ns, '--output', 'json']);
      expect(outcomeOf(result), result.stderr).toMatchObject({ result: 'recorded', kind });
    }

    serve = await startServe();
    expect(serve.output()).toContain('no reports taken (--no-reports)');
    // The report endpoint takes nothing without the key: refused before any API request.
    const refused = await fetch(`${serve.base}/externalCheckStatus`, {
      method: 'POST',
      body: JSON.stringify({ OK: true, Errors: [] }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/this server takes no reports/);

    // The chart's rules with the failing alert's wait cut to none, so the test need not wait 5 minutes
    // (promtool's cases above test the wait itself).
    const rules = await renderedRuleFile(tools.helm, ['monitoring.rules.failingFor=0s']);
    const target = new URL(serve.base).host;
    const config = [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'rule_files: [rules.yaml]',
      'scrape_configs:',
      '  - job_name: khrun',
      '    honor_labels: true',
      '    metrics_path: /metrics',
      `    static_configs: [{ targets: ['${target}'] }]`,
      '',
    ].join('\n');
    prometheus = await startPrometheus({ bin: tools.prometheus, dir, config, rules, timeoutMs: 60_000 });
    const base = prometheus.base;

    // The target is up, and khrun's series keep their own namespace label (honor_labels).
    const targets = await until('the khrun target to be scraped', async () => {
      const data = await promApi<{
        activeTargets: Array<{ health: string; labels: Record<string, string> }>;
      }>(base, 'targets');
      return data.activeTargets.every((t) => t.health === 'up') && data.activeTargets.length
        ? data.activeTargets
        : undefined;
    });
    expect(targets).toEqual([expect.objectContaining({ labels: { instance: target, job: 'khrun' } })]);
    const checks = await until('both checks in kuberhealthy_check', async () => {
      const result = await promQuery(base, `kuberhealthy_check{job="khrun",namespace="${ns}"}`);
      return result.length === 2 ? result : undefined;
    });
    const byCheck = new Map(checks.map((s) => [s.metric.check, s]));
    expect(byCheck.get(`${ns}/widget`)).toMatchObject({
      metric: { __name__: 'kuberhealthy_check', job: 'khrun', namespace: ns, status: '0', error },
      value: [expect.any(Number), '0'],
    });
    // An empty label is no label to Prometheus: the passing check's error="" is absent.
    expect(byCheck.get(`${ns}/healthy`)).toMatchObject({
      metric: { namespace: ns, status: '1' },
      value: [expect.any(Number), '1'],
    });
    expect(byCheck.get(`${ns}/healthy`)?.metric).not.toHaveProperty('error');
    expect(checks.every((s) => !('exported_namespace' in s.metric))).toBe(true);

    // The alert fires for the failing check alone, naming the check, its namespace and its error.
    type Alert = { labels: Record<string, string>; annotations: Record<string, string>; state: string };
    const firing = await until('KhrunCheckFailing to fire', async () => {
      const { alerts } = await promApi<{ alerts: Alert[] }>(base, 'alerts');
      const found = alerts.filter((a) => a.labels.alertname === 'KhrunCheckFailing' && a.state === 'firing');
      return found.length ? found : undefined;
    });
    expect(firing).toEqual([
      {
        labels: { alertname: 'KhrunCheckFailing', check: `${ns}/widget`, namespace: ns, severity: 'warning' },
        annotations: {
          summary: `Check ${ns}/widget in namespace ${ns} is failing`,
          description: `Check ${ns}/widget (namespace ${ns}) has failed for 0s. Its error: ${error}`,
        },
        state: 'firing',
        activeAt: expect.any(String),
        value: expect.any(String),
      },
    ]);
    // Every rule evaluates without error on khrun's real series; none but that one fires (both checks
    // just ran, and the one server is up). KhrunNotScraped is pending until its group's first evaluation
    // after the first scrape (each group evaluates on its own offset): awaited, then asserted.
    type Rule = { name: string; health: string; lastError?: string; state: string };
    const rulesNow = async () =>
      (await promApi<{ groups: Array<{ rules: Rule[] }> }>(base, 'rules')).groups.flatMap((g) => g.rules);
    const settled = (rules: Rule[]) =>
      rules.every((r) => r.health !== 'unknown') &&
      rules.filter((r) => r.state !== 'inactive').every((r) => r.name === 'KhrunCheckFailing');
    const all = await until('every rule evaluated after the first scrape', async () => {
      const rules = await rulesNow();
      return settled(rules) ? rules : undefined;
    }).catch(() => rulesNow());
    expect(all.map((r) => r.name).sort()).toEqual([
      'KhrunCheckFailing',
      'KhrunCheckStale',
      'KhrunDown',
      'KhrunNotScraped',
      'KhrunTickNotDispatching',
    ]);
    for (const rule of all) expect(rule.health, `${rule.name}: ${rule.lastError}`).toBe('ok');
    expect(all.filter((r) => r.state !== 'inactive').map((r) => r.name)).toEqual(['KhrunCheckFailing']);

    // Every dashboard query runs on the real series, and the series they select are there, but the
    // tick's dispatch time (these checks were run by hand, not dispatched).
    const dashboard = JSON.parse(
      await readFile(join(repoRoot, 'infra/helm/khrun/dashboards/khrun.json'), 'utf8'),
    ) as Parameters<typeof dashboardQueries>[0];
    const used = new Set<string>();
    for (const { panel, expr } of dashboardQueries(dashboard)) {
      const query = concreteQuery(expr);
      await expect(promQuery(base, query), `${panel}: ${query}`).resolves.toBeInstanceOf(Array);
      for (const name of metricNamesOf(query)) used.add(name);
    }
    const present = new Set(
      (await promQuery(base, 'count by (__name__) ({job="khrun"})')).map(
        (s: PromSample) => s.metric.__name__,
      ),
    );
    expect([...used].filter((name) => !present.has(name))).toEqual([
      'kuberhealthy_check_last_dispatch_timestamp_seconds',
    ]);
  }, 240_000);
});
