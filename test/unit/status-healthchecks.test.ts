import { describe, expect, it } from 'vitest';
import { describedState, renderDescribe } from '../../lib/commands/describe.ts';
import { healthCheckRows, mergeRows, renderStatusTable, statusRows } from '../../lib/commands/status.ts';
import { checkViewOf } from '../../lib/healthcheck/check-view.ts';
import type { HealthCheck, HealthCheckStatus } from '../../lib/healthcheck/resources.ts';
import { timeoutMsOf } from '../../lib/healthcheck/state-view.ts';
import { healthCheckDetail, listedHealthChecks, runIntervalMsOf } from '../../lib/healthcheck/status-json.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { renderMetrics } from '../../lib/status/metrics.ts';
import { buildStatus } from '../../lib/status/status-json.ts';
import { parsePromText } from '../helpers/prom-text.ts';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const T = NOW / 1000 - 60;

function hc(namespace: string, name: string, status?: Partial<HealthCheckStatus>, spec = {}): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name, namespace },
    spec: { runInterval: '1m', timeout: '20s', podSpec: { spec: { containers: [] } }, ...spec },
    ...(status ? { status: { ok: false, currentUUID: '', ...status } } : {}),
  };
}

function khstate(namespace: string, name: string, errors: string[] = []): KhState {
  const state = newKhState(name, namespace);
  state.spec = {
    ...state.spec,
    OK: errors.length === 0,
    Errors: errors,
    RunDuration: '1.5s',
    LastRun: '2026-12-01T11:59:00Z',
    AuthoritativePod: 'p',
    uuid: 'u',
    Namespace: namespace,
  };
  return state;
}

const passed = hc('a', 'web', {
  ok: true,
  runDuration: 1_500_000_000,
  namespace: 'a',
  lastRunUnix: T,
  successCount: 3,
  lastOKUnix: T + 1,
});
const failed = hc('b', 'web', {
  ok: false,
  errors: ['disk full', ' '],
  lastRunUnix: T,
  failureCount: 2,
  lastFailureUnix: T + 2,
});
const running = hc('a', 'busy', {
  ok: true,
  currentUUID: 'secret-run-uuid',
  lastRunUnix: T,
  successCount: 1,
});
const neverRan = hc('a', 'new');

describe('healthCheckDetail: v3.0.0 /json entries', () => {
  it('writes v3 keys with omitempty, the derived timings, and never the live run UUID', () => {
    expect(healthCheckDetail(passed)).toEqual({
      ok: true,
      runDuration: 1_500_000_000,
      namespace: 'a',
      currentUUID: '',
      lastRunUnix: T,
      successCount: 3,
      lastOKUnix: T + 1,
      nextRunUnix: T + 60,
      timeoutSeconds: 20,
      runIntervalSeconds: 60,
      running: false,
    });
    const busy = healthCheckDetail(running);
    expect(busy.currentUUID).toBe('');
    expect(busy.running).toBe(true);
    expect(busy).not.toHaveProperty('nextRunUnix');
    expect(JSON.stringify(busy)).not.toContain('secret-run-uuid');
  });

  it("takes v3's defaults (30s, 10m) and fills an empty status namespace with the check's", () => {
    const d = healthCheckDetail(
      hc('c', 'x', { ok: true, lastRunUnix: T }, { runInterval: '', timeout: undefined }),
    );
    expect(d).toMatchObject({
      namespace: 'c',
      timeoutSeconds: 30,
      runIntervalSeconds: 600,
      nextRunUnix: T + 600,
    });
  });

  it('lists only HealthChecks that ran, in the wanted namespaces, keyed namespace/name', () => {
    const all = listedHealthChecks([neverRan, failed, running, passed]);
    expect(all.map((h) => h.key)).toEqual(['a/busy', 'a/web', 'b/web']);
    expect(listedHealthChecks([failed, passed], ['b']).map((h) => h.key)).toEqual(['b/web']);
    expect(all.find((h) => h.key === 'b/web')?.errors).toEqual(['disk full']);
  });
});

describe('buildStatus with HealthChecks', () => {
  it('leaves the v2 document byte for byte as before when no HealthCheck ran', () => {
    const states = [khstate('a', 'web')];
    const opts = { currentMaster: 'm' };
    expect(JSON.stringify(buildStatus(states, { ...opts, healthChecks: [neverRan] }))).toBe(
      JSON.stringify(buildStatus(states, opts)),
    );
  });

  it('adds HealthCheckDetails beside CheckDetails; a failing HealthCheck turns the global OK false', () => {
    const status = buildStatus([khstate('a', 'web')], { currentMaster: 'm', healthChecks: [passed, failed] });
    expect(Object.keys(status.CheckDetails)).toEqual(['a/web']);
    expect(Object.keys(status.HealthCheckDetails ?? {})).toEqual(['a/web', 'b/web']);
    expect(status.OK).toBe(false);
    expect(status.Errors).toEqual(['disk full']);
    const ok = buildStatus([khstate('a', 'web')], { currentMaster: 'm', healthChecks: [passed] });
    expect(ok.OK).toBe(true);
    expect(ok.Errors).toEqual([]);
  });

  it('filters HealthChecks by namespace like khchecks (?namespace=)', () => {
    const status = buildStatus([], { currentMaster: 'm', namespaces: ['a'], healthChecks: [passed, failed] });
    expect(Object.keys(status.HealthCheckDetails ?? {})).toEqual(['a/web']);
    expect(status.OK).toBe(true);
  });
});

describe('renderMetrics with HealthChecks', () => {
  const render = (healthChecks: HealthCheck[]) =>
    renderMetrics([khstate('a', 'web', ['down'])], { currentMaster: 'm', nowMs: NOW, healthChecks });

  it('keeps khcheck series exactly as without HealthChecks and adds v3-labelled ones with kind', async () => {
    const without = parsePromText(await render([]));
    const withHc = parsePromText(await render([passed, failed]));
    for (const [name, family] of without) {
      const khcheckSamples = withHc.get(name)?.samples.filter((s) => s.labels.kind === undefined);
      expect(khcheckSamples, name).toEqual(family.samples);
    }
    const check = withHc.get('kuberhealthy_check')?.samples.filter((s) => s.labels.kind === 'HealthCheck');
    expect(check).toEqual([
      {
        name: 'kuberhealthy_check',
        labels: { check: 'web', namespace: 'a', status: '1', error: '', kind: 'HealthCheck' },
        value: 1,
      },
      {
        name: 'kuberhealthy_check',
        labels: { check: 'web', namespace: 'b', status: '0', error: 'disk full| ', kind: 'HealthCheck' },
        value: 0,
      },
    ]);
  });

  it("takes v3's status fields for durations, counters and ages", async () => {
    const families = parsePromText(await render([passed, failed]));
    const value = (family: string, namespace: string) =>
      families
        .get(family)
        ?.samples.find((s) => s.labels.kind === 'HealthCheck' && s.labels.namespace === namespace)?.value;
    expect(value('kuberhealthy_check_duration_seconds', 'a')).toBe(1.5);
    expect(value('kuberhealthy_check_success_total', 'a')).toBe(3);
    expect(value('kuberhealthy_check_failure_total', 'b')).toBe(2);
    expect(value('kuberhealthy_check_seconds_since_success', 'a')).toBe(59);
    expect(value('kuberhealthy_check_seconds_since_success', 'b')).toBeUndefined();
    expect(value('kuberhealthy_check_last_run_timestamp_seconds', 'b')).toBe(T);
    expect(value('kuberhealthy_check_run_interval_seconds', 'a')).toBe(60);
    expect(value('kuberhealthy_check_timeout_seconds', 'a')).toBe(20);
  });

  it("takes the tick's dispatch time from the khrun.dev/dispatched annotation on the HealthCheck", async () => {
    const dispatched = {
      ...passed,
      metadata: {
        ...passed.metadata,
        annotations: { [ANNOTATION.dispatch]: JSON.stringify({ atMs: NOW - 30_000, ref: 'job-1', by: 't' }) },
      },
    };
    const families = parsePromText(await render([dispatched, failed]));
    expect(families.get('kuberhealthy_check_last_dispatch_timestamp_seconds')?.samples).toEqual([
      {
        name: 'kuberhealthy_check_last_dispatch_timestamp_seconds',
        labels: { check: 'web', namespace: 'a', kind: 'HealthCheck' },
        value: (NOW - 30_000) / 1000,
      },
    ]);
  });
});

describe('khrun status: both kinds in one table', () => {
  const khcheck = { metadata: { name: 'web', namespace: 'a' } } as KhCheck;
  const khcheckRows = statusRows([khcheck], [khstate('a', 'web', ['down'])]);
  const view = { nowMs: NOW, color: false, wide: false };

  it('prints a khcheck-only table exactly as before (no KIND column)', () => {
    expect(renderStatusTable(mergeRows(khcheckRows, healthCheckRows([])), view)).toBe(
      renderStatusTable(khcheckRows, view),
    );
    expect(renderStatusTable(khcheckRows, view).split('\n')[0]).toMatch(/^CHECK\s/);
  });

  it('leads with KIND once HealthChecks are listed, ordered by namespace and name, khcheck first', () => {
    const lines = renderStatusTable(mergeRows(khcheckRows, healthCheckRows([failed, passed, neverRan])), view)
      .split('\n')
      .map((l) => l.split(/\s{3,}/));
    expect(lines.map((l) => l.slice(0, 4))).toEqual([
      ['KIND', 'CHECK', 'NAMESPACE', 'OK'],
      ['HealthCheck', 'new', 'a', '-'],
      ['khcheck', 'web', 'a', 'false'],
      ['HealthCheck', 'web', 'a', 'true'],
      ['HealthCheck', 'web', 'b', 'false'],
    ]);
    expect(lines[3]?.slice(4)).toEqual(['60s', '1.5s', '0']);
    expect(lines[4]?.at(-1)).toBe('disk full');
  });

  it('shows a HealthCheck run in progress from its currentUUID and lastRunUnix (-o wide)', () => {
    const [row] = healthCheckRows([running]);
    expect(row).toMatchObject({ kind: 'HealthCheck', runningSinceMs: T * 1000, hasRun: true, ok: true });
    const table = renderStatusTable([row!], { ...view, wide: true });
    expect(table).toContain('for 60s');
    expect(table).not.toContain('secret-run-uuid');
  });
});

describe('khrun describe: a HealthCheck through its views', () => {
  it('shows the kind, the v3 durations and the status from the HealthCheck', () => {
    const check = checkViewOf(failed, {
      timeoutMs: timeoutMsOf(failed),
      runIntervalMs: runIntervalMsOf(failed),
    });
    const text = renderDescribe(
      {
        name: 'web',
        namespace: 'b',
        check,
        state: describedState(failed),
        pods: [],
        events: [],
        kind: 'HealthCheck',
      },
      { nowMs: NOW, color: false },
    );
    expect(text).toMatch(/^Kind:\s+HealthCheck \(kuberhealthy\.github\.io\/v2\)$/m);
    expect(text).toMatch(/^Run Interval:\s+1m0s$/m);
    expect(text).toMatch(/^Timeout:\s+20s$/m);
    expect(text).toMatch(/^Status:\s+FAILING/m);
    expect(text).toMatch(/^Last Run:\s.*by kuberhealthy$/m);
  });
});
