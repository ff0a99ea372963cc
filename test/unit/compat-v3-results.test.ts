import { describe, expect, it } from 'vitest';
import { compareStatuses } from '../compat/v3-results.ts';
import { renderV3Table } from '../compat/v3-table.ts';

const namespaces = { kuberhealthy: 'kh3-aaaaaa', khrun: 'kh3-khrun-bbbbbb' };

describe('compareStatuses: one v3 status field per row', () => {
  it('agrees on equal values, on namespaces by role, and on times by where they fall', () => {
    const rows = compareStatuses({
      check: 'ok',
      kuberhealthy: {
        ok: true,
        currentUUID: '',
        namespace: namespaces.kuberhealthy,
        lastRunUnix: 100,
        lastOKUnix: 103,
        successCount: 1,
      },
      khrun: {
        ok: true,
        currentUUID: '',
        namespace: namespaces.khrun,
        lastRunUnix: 900,
        lastOKUnix: 901,
        successCount: 1,
        runDuration: 2e9,
      },
      namespaces,
    });
    const by = Object.fromEntries(rows.map((r) => [r.field, r]));
    for (const f of [
      'ok',
      'currentUUID',
      'namespace',
      'lastRunUnix',
      'lastOKUnix',
      'successCount',
      'failureCount',
      'errors',
    ])
      expect(by[f]?.same, f).toBe(true);
    expect(by.runDuration).toMatchObject({ same: false, kuberhealthy: '(absent)', khrun: 'ns, > 0' });
    expect(by.runDuration?.why).toMatch(/StopCheck/);
  });

  it('tells a different error apart, with uuids and times of a timeout message normalised', () => {
    const msg = (u: string) => `check run ${u} timed out after 5s (started at 2026-12-01T12:00:00Z)`;
    const [same] = compareStatuses({
      check: 't',
      kuberhealthy: { errors: [msg('0b5e2a36-1c7d-4bb5-9d6c-1f0e8f3a9b11')] },
      khrun: { errors: [msg('7c1f0a2e-2b4d-4c5e-8f9a-0d1e2f3a4b5c')] },
      namespaces,
    }).filter((r) => r.field === 'errors');
    expect(same?.same).toBe(true);
    const [other] = compareStatuses({
      check: 't',
      kuberhealthy: { errors: ['a'] },
      khrun: { errors: ['b'] },
      namespaces,
    }).filter((r) => r.field === 'errors');
    expect(other?.same).toBe(false);
  });

  it('renders a table with a row per field and a column per check', () => {
    const fields = ['c1', 'c2'].flatMap((check) =>
      compareStatuses({
        check,
        kuberhealthy: { ok: true, currentUUID: '' },
        khrun: { ok: true, currentUUID: '' },
        namespaces,
      }),
    );
    const table = renderV3Table({
      kuberhealthy: 'v3.0.0',
      measured: '2026-12-01',
      how: 'h',
      separation: 's',
      fields,
      v3ReadsKhrun: [{ check: 'c1', json: 'ok true', metric: 'status="1"', matches: true }],
    });
    expect(table).toContain('| status field | c1 | c2 |');
    expect(table).toContain('| `ok` | same: true | same: true |');
    expect(table).toContain('| c1 | ok true | status="1" | yes |');
  });
});
