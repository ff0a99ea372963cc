import { describe, expect, it } from 'vitest';
import type { HealthCheck, HealthCheckStatus } from '../../lib/healthcheck/resources.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { buildPageData } from '../../lib/status/page-data.ts';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const T = NOW / 1000 - 60;

function hc(namespace: string, name: string, status?: Partial<HealthCheckStatus>): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name, namespace },
    spec: { runInterval: '1m', timeout: '20s', podSpec: { spec: { containers: [] } } },
    ...(status ? { status: { ok: false, currentUUID: '', ...status } } : {}),
  };
}

function ran(namespace: string, name: string): KhState {
  const state = newKhState(name, namespace);
  state.spec = {
    ...state.spec,
    OK: true,
    Errors: [],
    RunDuration: '1s',
    LastRun: '2026-12-01T11:59:00Z',
    AuthoritativePod: 'p',
    Namespace: namespace,
  };
  return state;
}

const page = (states: KhState[], healthChecks: HealthCheck[], namespaces?: string[]) =>
  buildPageData(states, { currentMaster: 'm', nowMs: NOW, namespaces, healthChecks });

describe('the status page data with HealthChecks', () => {
  it('lists a HealthCheck beside the khcheck of the same name, told apart by kind and key', () => {
    const data = page([ran('a', 'web')], [hc('a', 'web', { ok: true, lastRunUnix: T, runDuration: 2e9 })]);
    expect(data.checks.map((c) => [c.key, c.kind])).toEqual([
      ['a/web', undefined],
      ['HealthCheck:a/web', 'HealthCheck'],
    ]);
    expect(data.checks[0]).not.toHaveProperty('kind');
    expect(data.checks[1]).toMatchObject({ ok: true, hasRun: true, lastRunMs: T * 1000, durationMs: 2_000 });
    expect(data.ok).toBe(true);
  });

  it('puts a failing HealthCheck first and makes the page not OK; a never-run one is pending', () => {
    const data = page(
      [ran('a', 'web')],
      [hc('b', 'down', { ok: false, errors: ['disk full'], lastRunUnix: T }), hc('a', 'new')],
    );
    expect(data.checks.map((c) => c.key)).toEqual(['HealthCheck:b/down', 'HealthCheck:a/new', 'a/web']);
    expect(data.checks[0]).toMatchObject({ ok: false, errors: ['disk full'] });
    expect(data.checks[1]).toMatchObject({ hasRun: false, lastRunMs: null, durationMs: null });
    expect(data.ok).toBe(false);
  });

  it('filters HealthChecks by their own namespace', () => {
    const data = page([], [hc('a', 'x', { ok: true, lastRunUnix: T }), hc('b', 'y')], ['b']);
    expect(data.checks.map((c) => c.key)).toEqual(['HealthCheck:b/y']);
  });
});
