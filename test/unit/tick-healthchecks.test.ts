import { describe, expect, it } from 'vitest';
import { decideHealthCheckDue } from '../../lib/healthcheck/due.ts';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import { ANNOTATION } from '../../lib/state/khstate.ts';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const sec = (ms: number) => Math.floor(ms / 1000);
const TIMINGS = { tickPeriodMs: 60_000, dispatchTtlMs: 300_000, maxFirstRunJitterMs: 60_000 };

function hc(
  status: Partial<NonNullable<HealthCheck['status']>> | undefined,
  annotations: Record<string, unknown> = {},
) {
  const value: HealthCheck = {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: {
      name: 'dns',
      namespace: 'team',
      uid: 'uid-1',
      annotations: Object.fromEntries(Object.entries(annotations).map(([k, v]) => [k, JSON.stringify(v)])),
    },
    spec: {
      runInterval: '5m',
      timeout: '1m',
      podSpec: { spec: { containers: [{ name: 'c', image: 'x' }] } },
    },
    ...(status ? { status: { ok: true, currentUUID: '', ...status } } : {}),
  };
  return value;
}

describe("decideHealthCheckDue: v3's rule (no currentUUID, now − lastRunUnix ≥ runInterval), by the API server's time", () => {
  it.each([
    { name: 'never run', check: hc(undefined), want: { due: true, reason: 'never-run' } },
    {
      name: 'interval not yet passed',
      check: hc({ lastRunUnix: sec(T0 - 299_000) }),
      want: { due: false, reason: 'not-yet', nextCheckMs: sec(T0 - 299_000) * 1000 + 300_000 },
    },
    {
      name: 'interval passed',
      check: hc({ lastRunUnix: sec(T0 - 300_000) }),
      want: { due: true, reason: 'interval-passed' },
    },
    {
      name: "a run in progress under v3's controller (currentUUID, no khrun lease), before its deadline",
      check: hc({ currentUUID: 'u-1', lastRunUnix: sec(T0 - 30_000) }),
      want: { due: false, reason: 'running' },
    },
    {
      name: 'a currentUUID left past its deadline',
      check: hc({ currentUUID: 'u-1', lastRunUnix: sec(T0 - 90_000) }),
      want: { due: true, reason: 'close-stale' },
    },
    {
      name: 'dispatched by another tick, not yet started',
      check: hc(
        { lastRunUnix: sec(T0 - 600_000) },
        { [ANNOTATION.dispatch]: { atMs: T0 - 10_000, ref: 'j', by: 't' } },
      ),
      want: { due: false, reason: 'dispatched' },
    },
    {
      name: 'a dispatch that led to the last run is not pending',
      check: hc(
        { lastRunUnix: sec(T0 - 400_000) },
        { [ANNOTATION.dispatch]: { atMs: T0 - 401_000, ref: 'j', by: 't' } },
      ),
      want: { due: true, reason: 'interval-passed' },
    },
  ])('$name', ({ check, want }) => {
    expect(decideHealthCheckDue(check, T0, TIMINGS)).toMatchObject(want);
  });
});
