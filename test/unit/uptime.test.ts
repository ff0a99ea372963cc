import { describe, expect, it } from 'vitest';
import { renderStatusTable, statusRows } from '../../lib/commands/status.ts';
import { formatSilence, SILENCE_ANNOTATION } from '../../lib/notify/silence.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import { formatNotifyState, NOTIFY_ANNOTATION } from '../../lib/state/notify-state.ts';
import { recordOutcome } from '../../lib/state/record.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import {
  addResult,
  availability,
  DAY_MS,
  formatAvailability,
  HOUR_MS,
  parseUptime,
  readUptime,
  UPTIME_ANNOTATION,
  type Uptime,
} from '../../lib/state/uptime.ts';
import { renderMetrics } from '../../lib/status/metrics.ts';
import { buildStatus } from '../../lib/status/status-json.ts';
import { handleStatusRequest } from '../../lib/status/status-routes.ts';
import { parsePromText } from '../helpers/prom-text.ts';

// Uptime (issue 25, item 7): counted buckets kept with the state, and where they are shown.

const T0 = Date.UTC(2026, 11, 3, 10, 30, 0);

function feed(results: Array<[ok: boolean, atMs: number]>, start?: Uptime) {
  return results.reduce<Uptime | undefined>((u, [ok, at]) => addResult(u, ok, at), start) as Uptime;
}

describe('uptime buckets', () => {
  it('counts results per hour and per UTC day, and reads the windows from them', () => {
    const u = feed([
      [true, T0 - 3 * DAY_MS],
      [false, T0 - 25 * HOUR_MS],
      [true, T0 - 2 * HOUR_MS],
      [false, T0 - HOUR_MS],
      [true, T0],
      [true, T0 + 1000],
    ]);
    expect(availability(u, '24h', T0)).toBe(3 / 4);
    expect(availability(u, '7d', T0)).toBe(4 / 6);
    expect(availability(u, '30d', T0)).toBe(4 / 6);
    // A day later the hourly window holds nothing; the days still do.
    expect(availability(u, '24h', T0 + DAY_MS)).toBeNull();
    expect(availability(u, '30d', T0 + DAY_MS)).toBe(4 / 6);
  });

  it('stays bounded: 24 hourly and 30 daily buckets, however long it runs', () => {
    const results: Array<[boolean, number]> = [];
    for (let i = 0; i < 24 * 90; i++) results.push([i % 10 !== 0, T0 + i * HOUR_MS]);
    const u = feed(results);
    expect(u.hours).toHaveLength(24);
    expect(u.days).toHaveLength(30);
    expect(JSON.stringify(u).length).toBeLessThan(800);
    expect(availability(u, '24h', T0 + (24 * 90 - 1) * HOUR_MS)).toBeCloseTo(0.9, 1);
  });

  it('is written by the outcome write itself, and a skipped run is not counted', () => {
    const run = {
      uuid: 'u1',
      startedAtMs: T0 - 5000,
      deadlineMs: T0 + 60_000,
      pod: 'p',
      runner: 'r',
      leaseUntilMs: T0,
    };
    const outcome = (kind: 'Succeeded' | 'Skipped' | 'Failed') => ({
      kind,
      ok: kind !== 'Failed',
      errors: kind === 'Failed' ? ['down'] : [],
      durationMs: 1000,
      node: 'n',
    });
    let state = newKhState('web', 'team');
    state = recordOutcome(state, run, outcome('Succeeded'), { nowMs: T0, runner: 'r' });
    state = recordOutcome(state, run, outcome('Skipped'), { nowMs: T0 + 1, runner: 'r' });
    state = recordOutcome(state, run, outcome('Failed'), { nowMs: T0 + 2, runner: 'r' });
    expect(readUptime(state)?.hours.at(-1)).toEqual([1, 2]);
  });

  it('reads a damaged annotation as absent, never as trusted counts', () => {
    expect(parseUptime('{"hour":1,"hours":[[3,2]],"day":0,"days":[]}')).toBeUndefined();
    expect(parseUptime('not json')).toBeUndefined();
    expect(formatAvailability(0.99999)).toBe('99.99%');
    expect(formatAvailability(null)).toBe('-');
  });
});

function ranState(name: string, u: Uptime, extra: Record<string, string> = {}): KhState {
  const s = newKhState(name, 'team');
  s.spec = { ...s.spec, OK: true, AuthoritativePod: 'r', LastRun: new Date(T0).toISOString() };
  s.metadata.annotations = { [UPTIME_ANNOTATION]: JSON.stringify(u), ...extra };
  return s;
}

describe('where uptime is shown', () => {
  const u = feed([
    [true, T0 - HOUR_MS],
    [false, T0],
  ]);
  const state = ranState('web', u);

  it('metrics: kuberhealthy_check_availability_ratio per window', async () => {
    const text = await renderMetrics([state], { currentMaster: 'm', nowMs: T0 });
    const samples = parsePromText(text).get('kuberhealthy_check_availability_ratio')?.samples ?? [];
    expect(samples.map((s) => [s.labels.window, s.value])).toEqual([
      ['24h', 0.5],
      ['7d', 0.5],
      ['30d', 0.5],
    ]);
    expect(samples[0]?.labels).toMatchObject({ check: 'team/web', namespace: 'team' });
  });

  it("the status JSON: v2's document unless khrun's details are asked for", async () => {
    expect(buildStatus([state], { currentMaster: 'm' }).KhrunDetails).toBeUndefined();
    const doc = buildStatus([state], { currentMaster: 'm', khrunDetailsAtMs: T0 });
    expect(doc.KhrunDetails?.['team/web']).toMatchObject({
      availability: { '24h': 0.5, '7d': 0.5, '30d': 0.5 },
      runs: { '24h': 2, '7d': 2, '30d': 2 },
    });
    const answer = await handleStatusRequest(
      { states: () => [state], currentMaster: 'm', clock: { nowMs: () => T0 } },
      { url: '/json?khrun=1', hasBody: false },
    );
    expect(JSON.parse(answer?.body ?? '{}').KhrunDetails['team/web'].availability['24h']).toBe(0.5);
  });

  it('badges: an SVG of the window asked for, cached briefly; bad input refused before any lookup; text escaped', async () => {
    const opts = { states: () => [state], currentMaster: 'm', clock: { nowMs: () => T0 } };
    const badge = await handleStatusRequest(opts, { url: '/badge/team/web.svg?window=7d', hasBody: false });
    expect(badge).toMatchObject({
      status: 200,
      headers: { 'content-type': 'image/svg+xml; charset=utf-8', 'cache-control': 'public, max-age=60' },
    });
    expect(badge?.body).toContain('uptime 7d');
    expect(badge?.body).toContain('50.00%');
    for (const url of [
      '/badge/team/web.svg?window=1y',
      '/badge/Team/web.svg',
      '/badge/team/%3Cscript%3E.svg',
      `/badge/team/${'a'.repeat(300)}.svg`,
      '/badge/team/web.png',
    ]) {
      const r = await handleStatusRequest(opts, { url, hasBody: false });
      expect(r?.status, url).toBe(400);
      expect(r?.body).not.toContain('<script');
    }
    const missing = await handleStatusRequest(opts, { url: '/badge/team/gone.svg', hasBody: false });
    expect(missing?.status).toBe(404);
  });

  it('khrun status: -o wide shows uptime and alerts, the table marks a silenced check by its name', () => {
    const silence = formatSilence({ untilMs: T0 + HOUR_MS, reason: 'db <migration>', by: 'alice' });
    const check = {
      metadata: { name: 'web', namespace: 'team', annotations: { [SILENCE_ANNOTATION]: silence } },
      spec: {},
    } as unknown as KhCheck;
    const firing = ranState('web', u, {
      [NOTIFY_ANNOTATION]: formatNotifyState({ alert: 'firing', successes: 0, outbox: [], incident: 'x' }),
    });
    const rows = statusRows([check], [firing]);
    const narrow = renderStatusTable(rows, { nowMs: T0, color: false, wide: false });
    expect(narrow.split('\n')[1]).toMatch(/^web \(silenced\) /);
    const wide = renderStatusTable(rows, { nowMs: T0, color: false, wide: true });
    expect(wide).toContain('50.00%/50.00%/50.00%');
    expect(wide).toContain('silenced 60m: db <migration> (alice); firing');
  });
});
