import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, type CoreV1Event, CustomObjectsApi } from '@kubernetes/client-node';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HC_GROUP, HC_PLURAL, HC_VERSION } from '../../lib/healthcheck/resources.ts';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { retryTransient } from '../../lib/kube/transient.ts';
import { HISTORY_ANNOTATION, type HistoryEntry, readHistory } from '../../lib/state/history.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { readTotals } from '../../lib/state/totals.ts';
import { listHealthChecks } from '../../lib/status/healthcheck-cache.ts';
import { type StateCache, startStateCache } from '../../lib/status/state-cache.ts';
import { statusRoutes } from '../../lib/status/status-routes.ts';
import { parsePromText, sampleValue } from '../helpers/prom-text.ts';
import { ensureChromium } from './helpers/chromium.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import {
  createCheck,
  nodeContainer,
  npmClientEnv,
  outcomeOf,
  readState,
  repoRoot,
  runKhrun,
} from './helpers/khrun.ts';

const kc = adminKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
// What a check might report: quotes, a backslash path, a newline, non-ASCII, an emoji and markup.
const NASTY = 'backend "db-1" said: C:\\data\\x failed\nline two — überlastet 😀 <b>&amp;</b>';
const V2_KEYS = ['OK', 'Errors', 'RunDuration', 'Namespace', 'Node', 'LastRun', 'AuthoritativePod', 'uuid'];

let ns: string;
let cache: StateCache;
let server: Server;
let base: string;
const pageDataHits: string[] = [];

const runArgs = (check: string) => ['--check', check, '--namespace', ns, '--output', 'json'];

/** Any khrun command through the real entrypoint, stdout piped (so never a terminal). */
function khrun(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), ...args], {
      env: { ...process.env, KUBECONFIG: inject('kubeconfigPath'), FORCE_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Resolves once the cache's view satisfies test; rejects after timeoutMs. */
function cacheUntil(test: (states: readonly KhState[]) => boolean, description: string, timeoutMs = 30_000) {
  return new Promise<void>((resolve, reject) => {
    const check = () => {
      if (!test(cache.snapshot())) return false;
      clearTimeout(timer);
      unsubscribe();
      resolve();
      return true;
    };
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for the cache: ${description}`));
    }, timeoutMs);
    const unsubscribe = cache.subscribe(check);
    check();
  });
}

/** A khstate created before any run, with history entries of earlier runs. */
async function seedHistory(name: string, entries: HistoryEntry[]) {
  const state = newKhState(name, ns);
  state.metadata.annotations = { [HISTORY_ANNOTATION]: JSON.stringify(entries) };
  await custom.createNamespacedCustomObject({
    group: KH_GROUP,
    version: KH_VERSION,
    plural: KHSTATE_PLURAL,
    namespace: ns,
    body: state,
  });
}

const reporter = (script: string) => ({ containers: [nodeContainer(script, { env: npmClientEnv })] });
const earlier = (i: number, error?: string): HistoryEntry => ({
  atMs: Date.now() - (100 - i) * 60_000,
  kind: error ? 'Failed' : 'Succeeded',
  ok: !error,
  durationMs: 1_000 + i,
  ...(error ? { error } : {}),
});

beforeAll(async () => {
  ns = await freshNamespace(kc, 'status');
  await createCheck(kc, ns, 'passes', reporter("require('kuberhealthy').ReportSuccess()"));
  await createCheck(
    kc,
    ns,
    'fails',
    reporter(`require('kuberhealthy').ReportFailure(${JSON.stringify([NASTY, 'second'])})`),
  );
  await createCheck(
    kc,
    ns,
    'silent',
    { containers: [nodeContainer('setInterval(() => {}, 1000)')] },
    { timeout: '3s' },
  );
  await createCheck(kc, ns, 'bounded-bytes', reporter("require('kuberhealthy').ReportSuccess()"));
  await createCheck(kc, ns, 'bounded-count', reporter("require('kuberhealthy').ReportSuccess()"));
  // 19 earlier runs with 200-character errors take ~5 KB: over the 4 KiB bound before the 20-entry one.
  await seedHistory(
    'bounded-bytes',
    Array.from({ length: 19 }, (_, i) => earlier(i, `E${i} ${'x'.repeat(196)}`)),
  );
  await seedHistory(
    'bounded-count',
    Array.from({ length: 20 }, (_, i) => earlier(i)),
  );
  // A khstate that never ran (empty AuthoritativePod): v2 hides it.
  await custom.createNamespacedCustomObject({
    group: KH_GROUP,
    version: KH_VERSION,
    plural: KHSTATE_PLURAL,
    namespace: ns,
    body: newKhState('never-ran', ns),
  });

  const runs = await Promise.all(
    ['passes', 'fails', 'silent', 'bounded-count'].map((c) => runKhrun(runArgs(c))),
  );
  for (const r of runs) expect(outcomeOf(r).result, r.stderr).toBe('recorded');
  for (let i = 0; i < 3; i++)
    expect(outcomeOf(await runKhrun(runArgs('bounded-bytes'))).kind).toBe('Succeeded');

  cache = startStateCache({ client: kubeClient(kc) });
  await cache.whenReady(30_000);
  const routes = statusRoutes({
    states: () => cache.snapshot(),
    // Listed per request, as the status Lambda does; a 429 while the API server's storage settles is retried.
    healthChecks: () => retryTransient(() => listHealthChecks(kubeClient(kc), [ns])),
    ready: () => cache.ready(),
    currentMaster: 'khrun-status-test',
    clock: { nowMs: () => Date.now() },
    refreshMs: 2_000,
  });
  server = createServer(async (req, res) => {
    if (req.url?.startsWith('/status/data')) pageDataHits.push(req.url);
    if (!(await routes(req, res))) {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 240_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await cache?.close();
  await dropNamespace(kc, ns);
});

describe('status of real checks on the local cluster', () => {
  it('serves v2’s JSON from the cache, field by field equal to the khstates', async () => {
    const res = await fetch(`${base}/?namespace=${ns}`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.split('\n')[1]).toBe('  "OK": false,');
    const status = JSON.parse(text) as Record<string, unknown> & {
      CheckDetails: Record<string, Record<string, unknown>>;
    };
    expect(Object.keys(status)).toEqual(['OK', 'Errors', 'CheckDetails', 'JobDetails', 'CurrentMaster']);
    expect(status.CurrentMaster).toBe('khrun-status-test');
    expect(status.JobDetails).toEqual({});
    const names = ['bounded-bytes', 'bounded-count', 'fails', 'passes', 'silent'];
    expect(Object.keys(status.CheckDetails)).toEqual(names.map((n) => `${ns}/${n}`));
    for (const name of names) {
      const spec = (await readState(kc, ns, name))?.spec as KhState['spec'];
      const details = status.CheckDetails[`${ns}/${name}`] as Record<string, unknown>;
      expect(Object.keys(details)).toEqual(V2_KEYS);
      for (const key of V2_KEYS)
        expect(details[key], `${name}.${key}`).toEqual(spec[key as keyof typeof spec]);
    }
    expect(status.Errors).toEqual([
      NASTY,
      'second',
      expect.stringMatching(
        new RegExp(`^Check execution error: ${ns}/silent: timed out waiting for checker pod to report in`),
      ),
    ]);
  });

  it('follows changes through the watch, and filters other namespaces out', async () => {
    const before = (await readState(kc, ns, 'passes'))?.metadata.resourceVersion;
    expect(outcomeOf(await runKhrun(runArgs('passes'))).kind).toBe('Succeeded');
    const after = (await readState(kc, ns, 'passes'))?.metadata.resourceVersion;
    expect(after).not.toBe(before);
    await cacheUntil(
      (states) =>
        states.some(
          (s) =>
            s.metadata.namespace === ns &&
            s.metadata.name === 'passes' &&
            s.metadata.resourceVersion === after,
        ),
      'the second run of passes',
    );
    const all = (await (await fetch(`${base}/json`)).json()) as { CheckDetails: Record<string, unknown> };
    expect(Object.keys(all.CheckDetails)).toContain(`${ns}/passes`);
    const none = (await (await fetch(`${base}/json?namespace=no-such-namespace`)).json()) as {
      OK: boolean;
      CheckDetails: object;
    };
    expect(none).toMatchObject({ OK: true, CheckDetails: {} });
    expect((await fetch(`${base}/`, { method: 'POST', body: '{"OK":true,"Errors":[]}' })).status).toBe(400);
  });

  it('serves /metrics that parse back, with the exact error text and the counters', async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    const families = parsePromText(text);
    const labels = (name: string) => ({ check: `${ns}/${name}`, namespace: ns });
    expect(sampleValue(families, 'kuberhealthy_check', { ...labels('passes'), status: '1', error: '' })).toBe(
      1,
    );
    expect(
      sampleValue(families, 'kuberhealthy_check', {
        ...labels('fails'),
        status: '0',
        error: `${NASTY}|second`,
      }),
    ).toBe(0);
    expect(sampleValue(families, 'kuberhealthy_check_success_total', labels('passes'))).toBe(2);
    expect(sampleValue(families, 'kuberhealthy_check_failure_total', labels('silent'))).toBe(1);
    expect(
      sampleValue(families, 'kuberhealthy_check_outcomes_total', {
        ...labels('silent'),
        outcome: 'TimedOut',
      }),
    ).toBe(1);
    expect(sampleValue(families, 'kuberhealthy_check_consecutive_failures', labels('fails'))).toBe(1);
    expect(sampleValue(families, 'kuberhealthy_check_run_interval_seconds', labels('passes'))).toBe(600);
    expect(sampleValue(families, 'kuberhealthy_check_run_duration_seconds_count', labels('passes'))).toBe(2);
    expect(sampleValue(families, 'kuberhealthy_check_seconds_since_success', labels('passes'))).toBeLessThan(
      120,
    );
    expect(
      sampleValue(families, 'kuberhealthy_check_seconds_since_success', labels('fails')),
    ).toBeUndefined();
    expect(text).not.toContain(`${ns}/never-ran`);
    const theirs = parsePrometheusTextFormat(text).find((f) => f.name === 'kuberhealthy_check');
    expect(theirs?.metrics.find((m) => m.labels?.check === `${ns}/fails`)?.labels?.error).toBe(
      `${NASTY}|second`,
    );
  });

  it('puts a Kubernetes Event on the khcheck for each recorded outcome', async () => {
    const events = async (name: string): Promise<CoreV1Event[]> =>
      (
        await core.listNamespacedEvent({
          namespace: ns,
          fieldSelector: `involvedObject.kind=KuberhealthyCheck,involvedObject.name=${name}`,
        })
      ).items;
    const passes = await events('passes');
    expect(passes.map((e) => [e.type, e.reason])).toEqual([
      ['Normal', 'CheckSucceeded'],
      ['Normal', 'CheckSucceeded'],
    ]);
    const uid = (
      (await custom.getNamespacedCustomObject({
        group: KH_GROUP,
        version: KH_VERSION,
        plural: 'khchecks',
        namespace: ns,
        name: 'passes',
      })) as { metadata: { uid: string } }
    ).metadata.uid;
    expect(passes[0]).toMatchObject({
      involvedObject: { kind: 'KuberhealthyCheck', apiVersion: 'comcast.github.io/v1', name: 'passes', uid },
      source: { component: 'khrun' },
    });
    const [failed] = await events('fails');
    expect(failed).toMatchObject({ type: 'Warning', reason: 'CheckFailed' });
    expect(failed?.message).toContain(NASTY);
    expect((await events('silent'))[0]).toMatchObject({ type: 'Warning', reason: 'CheckTimedOut' });
  });

  it('keeps the history bounded by count and by bytes after several runs', async () => {
    const count = await readState(kc, ns, 'bounded-count');
    const countHistory = readHistory(count);
    expect(countHistory).toHaveLength(20);
    expect(countHistory[0]?.durationMs).toBe(1_001);
    expect(countHistory.at(-1)).toMatchObject({ kind: 'Succeeded', ok: true });

    const bytes = await readState(kc, ns, 'bounded-bytes');
    const text = bytes?.metadata.annotations?.[HISTORY_ANNOTATION] ?? '';
    const history = readHistory(bytes);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4096);
    expect(history.length).toBeLessThan(20);
    expect(history.slice(-3).map((e) => e.kind)).toEqual(['Succeeded', 'Succeeded', 'Succeeded']);
    expect(history[0]?.error).toMatch(/^E\d+ x+$/);
    expect(readTotals(bytes).succeeded).toBe(3);
    expect(bytes?.metadata.annotations?.[ANNOTATION.consecutiveFailures]).toBe('0');
  });

  it('prints `khrun status` as a plain table when piped, and v2 JSON with -o json', async () => {
    const table = await khrun(['status', '--namespace', ns]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.includes('\u001b'), 'no ANSI escapes when piped').toBe(false);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^CHECK\s+NAMESPACE\s+OK\s+LAST RUN\s+DURATION\s+FAILURES\s+ERROR$/);
    const row = (name: string) => lines.find((l) => l.startsWith(`${name} `)) ?? '';
    expect(row('passes')).toMatch(new RegExp(`^passes\\s+${ns}\\s+true\\s+\\d+s\\s+\\S+\\s+0$`));
    expect(row('fails')).toMatch(
      new RegExp(
        `^fails\\s+${ns}\\s+false\\s+\\d+s\\s+\\S+\\s+1\\s+backend "db-1" said: C:\\\\data\\\\x failed line two`,
      ),
    );
    expect(row('never-ran (no khcheck)')).toMatch(/\s-\s+<never>\s+-\s+0$/);
    const json = await khrun(['status', '--namespace', ns, '-o', 'json']);
    const served = (await (await fetch(`${base}/?namespace=${ns}`)).json()) as { CheckDetails: unknown };
    expect((JSON.parse(json.stdout) as { CheckDetails: unknown }).CheckDetails).toEqual(served.CheckDetails);
  });

  it('prints `khrun describe` with the run timeline, errors, history and events', async () => {
    const out = await khrun(['describe', 'fails', '--namespace', ns]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('Status:        FAILING (1 consecutive failures)');
    expect(out.stdout).toContain('  - backend "db-1" said: C:\\data\\x failed\n    line two');
    expect(out.stdout).toMatch(/Run:\s+last run [0-9a-f]{8}, pod fails-\d+ \((Succeeded|Running)\)/);
    expect(out.stdout).toMatch(/\+\S+\s+scheduled on khrun-node/);
    expect(out.stdout).toMatch(/\+\S+\s+report accepted: not OK/);
    expect(out.stdout).toMatch(
      /History \(newest first\):\n\s+AGE\s+OUTCOME\s+DURATION\s+ERROR\n\s+\S+\s+Failed/,
    );
    expect(out.stdout).toMatch(/Warning\s+CheckFailed\s+\S+\s+khrun\s+run [0-9a-f]{8} failed after/);
    const missing = await khrun(['describe', 'no-such-check', '--namespace', ns]);
    expect(missing.code).toBe(2);
  });

  // Room for apt-get to install Chromium on a machine without it.
  it('renders the page in headless Chromium, refreshing from the server, and takes a screenshot', {
    timeout: 900_000,
  }, async () => {
    const chromiumPath = await ensureChromium();
    const run = promisify(execFile);
    const profile = await mkdtemp(join(tmpdir(), 'khrun-chromium-'));
    const artifacts = process.env.KHRUN_ARTIFACTS_DIR ?? join(tmpdir(), 'khrun-status-test');
    await mkdir(artifacts, { recursive: true });
    const screenshot = join(artifacts, 'status-page.png');
    const chromium = (extra: string[]) =>
      run(
        chromiumPath,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
          `--user-data-dir=${profile}`,
          '--window-size=1200,800',
          // Virtual time: timers run as fast as the page allows, and pending fetches hold the clock.
          '--virtual-time-budget=5000',
          ...extra,
          `${base}/status?namespace=${ns}`,
        ],
        { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
      );
    try {
      // A v3 HealthCheck named as a khcheck, its result in its status: a card of its own, tagged.
      const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL, namespace: ns };
      const hc = {
        apiVersion: `${HC_GROUP}/${HC_VERSION}`,
        kind: 'HealthCheck',
        metadata: { name: 'passes' },
      };
      const created = (await custom.createNamespacedCustomObject({
        ...co,
        body: { ...hc, spec: { runInterval: '5m', podSpec: { spec: { containers: [] } } } },
      })) as { metadata: { resourceVersion: string } };
      await custom.replaceNamespacedCustomObjectStatus({
        ...co,
        name: 'passes',
        body: {
          ...hc,
          metadata: { name: 'passes', resourceVersion: created.metadata.resourceVersion },
          status: {
            ok: true,
            lastRunUnix: Math.floor(Date.now() / 1000),
            runDuration: 1e9,
            successCount: 1,
          },
        },
      });
      const hitsBefore = pageDataHits.length;
      const { stdout: dom } = await chromium(['--dump-dom']);
      expect(pageDataHits.length, 'the page fetched fresh data').toBeGreaterThan(hitsBefore);
      expect(pageDataHits.at(-1)).toBe(`/status/data?namespace=${ns}`);
      for (const [name, ok] of [
        ['passes', 'true'],
        ['fails', 'false'],
        ['silent', 'false'],
        ['bounded-bytes', 'true'],
      ]) {
        expect(dom).toMatch(
          new RegExp(
            `<article class="card (ok|fail)" data-check="${ns}/${name}" data-ok="${ok}" data-has-run="true">`,
          ),
        );
      }
      expect(dom).toContain(`data-check="${ns}/never-ran" data-ok="true" data-has-run="false"`);
      expect(dom).toMatch(
        new RegExp(
          `<article class="card ok" data-check="HealthCheck:${ns}/passes" data-ok="true" data-has-run="true" data-kind="HealthCheck">.*?<span class="kind"[^>]*>HealthCheck</span>`,
        ),
      );
      // The error is text, not markup: its tags arrive escaped.
      expect(dom).toContain(
        'backend "db-1" said: C:\\data\\x failed\nline two — überlastet 😀 &lt;b&gt;&amp;amp;&lt;/b&gt;',
      );
      expect(dom).toContain('<span id="updated" class="meta">updated ');
      expect(dom).toContain('<span id="banner" class="banner fail">2 failing</span>');
      expect(dom).toMatch(/<svg class="chart"[^>]*aria-label="last 20 runs"/);
      await chromium([`--screenshot=${screenshot}`]);
      expect((await stat(screenshot)).size).toBeGreaterThan(10_000);
      console.log(`[status page] screenshot: ${screenshot}`);
    } finally {
      await rm(profile, { recursive: true, force: true });
    }
  });
});
