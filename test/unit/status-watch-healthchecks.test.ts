import { describe, expect, it } from 'vitest';
import { healthCheckRows, mergeRows, statusColumnWidths, statusRows } from '../../lib/commands/status.ts';
import { statusChanges, watchEvent, watchRowKey, watchTableLine } from '../../lib/commands/status-watch.ts';
import type { HealthCheck, HealthCheckStatus } from '../../lib/healthcheck/resources.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck } from '../../lib/state/resources.ts';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

function hc(name: string, status: Partial<HealthCheckStatus>): HealthCheck {
  return {
    apiVersion: 'kuberhealthy.github.io/v2',
    kind: 'HealthCheck',
    metadata: { name, namespace: 'a' },
    spec: { runInterval: '1m', timeout: '20s', podSpec: { spec: { containers: [] } } },
    status: { ok: false, currentUUID: '', ...status },
  };
}

const khcheck = { metadata: { name: 'web', namespace: 'a' }, spec: {} } as unknown as KhCheck;
const state = newKhState('web', 'a');
const rowsWith = (hcs: HealthCheck[]) => mergeRows(statusRows([khcheck], [state]), healthCheckRows(hcs));
const byKey = (rows: ReturnType<typeof rowsWith>) => new Map(rows.map((r) => [watchRowKey(r), r]));

describe('khrun status -w with HealthChecks', () => {
  const passed = hc('web', { ok: true, lastRunUnix: NOW / 1000 - 60, runDuration: 1e9 });
  const failed = hc('web', {
    ok: false,
    errors: ['disk full'],
    lastRunUnix: NOW / 1000 - 5,
    runDuration: 1e9,
  });

  it('follows a HealthCheck as a check of its own beside the khcheck of the same name', () => {
    const before = rowsWith([passed]);
    expect(before.map((r) => [r.kind ?? 'khcheck', r.name])).toEqual([
      ['khcheck', 'web'],
      ['HealthCheck', 'web'],
    ]);
    expect(statusChanges(byKey(before), rowsWith([failed]), false)).toEqual([
      {
        type: 'MODIFIED',
        row: expect.objectContaining({ kind: 'HealthCheck', ok: false, firstError: 'disk full' }),
      },
    ]);
    expect(statusChanges(byKey(before), rowsWith([]), false)).toEqual([
      { type: 'DELETED', row: expect.objectContaining({ kind: 'HealthCheck', name: 'web' }) },
    ]);
  });

  it('names the kind in the line (KIND column) and in -o json, a khcheck event unchanged', () => {
    const rows = rowsWith([failed]);
    const widths = statusColumnWidths(rows, { nowMs: NOW, wide: false });
    const line = watchTableLine(rows[1]!, { nowMs: NOW, color: false, wide: false, widths, kinds: true });
    expect(line.split(/\s+/).slice(0, 4)).toEqual(['HealthCheck', 'web', 'a', 'false']);
    expect(watchEvent({ type: 'MODIFIED', row: rows[1]! })).toMatchObject({
      kind: 'HealthCheck',
      check: 'a/web',
    });
    expect(watchEvent({ type: 'MODIFIED', row: rows[0]! })).not.toHaveProperty('kind');
  });
});
