import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import { reportHosting, reportSettings } from '../../lib/config/report-address.ts';
import { nattedUnsignedPolicy, reportKey, unsignedPolicy } from '../../lib/config/report-key.ts';
import { NO_FLAGS } from '../../lib/config/setting.ts';
import { signedReportUrl } from '../../lib/report/report-token.ts';

const dir = mkdtempSync(join(tmpdir(), 'khrun-report-key-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const input = (env: Record<string, string>) => ({ flags: {}, env, flagLabel: NO_FLAGS });
const KEY = 'c0ffee'.repeat(8);
const RUN = { namespace: 'checks', checkName: 'dns', uuid: 'u-1', deadlineMs: 1 };

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('KHRUN_REPORT_KEY and KHRUN_REPORT_KEY_FILE', () => {
  it('are unset by default', () => {
    expect(reportKey(input({}))).toBeUndefined();
  });

  it('read the same key inline or from a mounted Secret file (its trailing newline dropped)', () => {
    const file = join(dir, 'key');
    writeFileSync(file, `${KEY}\n`);
    const inline = reportKey(input({ KHRUN_REPORT_KEY: KEY }));
    const mounted = reportKey(input({ KHRUN_REPORT_KEY_FILE: file }));
    if (!inline || !mounted) throw new Error('no key');
    expect(signedReportUrl('http://x/externalCheckStatus', inline, RUN)).toBe(
      signedReportUrl('http://x/externalCheckStatus', mounted, RUN),
    );
  });

  it.each([
    [{ KHRUN_REPORT_KEY: 'short' }, 'KHRUN_REPORT_KEY', /5 characters, too short/],
    [{ KHRUN_REPORT_KEY: `${KEY} ${KEY}` }, 'KHRUN_REPORT_KEY', /printable ASCII/],
    [{ KHRUN_REPORT_KEY: KEY, KHRUN_REPORT_KEY_FILE: '/k' }, 'KHRUN_REPORT_KEY_FILE', /both set/],
    [{ KHRUN_REPORT_KEY_FILE: '/nonexistent/key' }, 'KHRUN_REPORT_KEY_FILE', /cannot be read \(ENOENT\)/],
  ])('refuse %j clearly, without echoing the key', (env, setting, problem) => {
    const error = configError(() => reportKey(input(env)));
    expect(error.setting).toBe(setting);
    expect(error.problem).toMatch(problem);
    expect(error.message).not.toContain(KEY);
    expect(error.message).toMatch(/openssl rand|one of them|file that holds the key/);
  });
});

describe('KHRUN_REPORT_UNSIGNED', () => {
  const key = reportKey(input({ KHRUN_REPORT_KEY: KEY }));

  it('defaults to refuse with a key, else to what v2 does (source address only where pods are not NATed)', () => {
    expect(unsignedPolicy(input({}), { key, natted: false })).toBe('refuse');
    expect(unsignedPolicy(input({}), { key: undefined, natted: false })).toBe('header-and-ip');
    expect(nattedUnsignedPolicy(input({}), key)).toBe('refuse');
    expect(nattedUnsignedPolicy(input({}), undefined)).toBe('header');
  });

  it('can be set explicitly, and is checked', () => {
    expect(unsignedPolicy(input({ KHRUN_REPORT_UNSIGNED: 'header' }), { key, natted: false })).toBe('header');
    expect(
      configError(() => unsignedPolicy(input({ KHRUN_REPORT_UNSIGNED: 'ip' }), { key, natted: false }))
        .setting,
    ).toBe('KHRUN_REPORT_UNSIGNED');
    expect(
      configError(() => nattedUnsignedPolicy(input({ KHRUN_REPORT_UNSIGNED: 'header-and-ip' }), key)).problem,
    ).toMatch(/NAT/);
  });
});

describe("khrun run's report hosting", () => {
  it('signs runs on a shared server with the key, and hosts its own endpoint otherwise', () => {
    const external = reportHosting(
      reportSettings({
        flags: {},
        env: { KH_EXTERNAL_REPORTING_URL: 'http://s/externalCheckStatus', KHRUN_REPORT_KEY: KEY },
        flagLabel: NO_FLAGS,
      }),
      { files: [], clusterName: undefined },
    );
    expect(external).toMatchObject({
      kind: 'external',
      url: 'http://s/externalCheckStatus',
      key: { bytes: Buffer.from(KEY) },
    });
    const plain = reportHosting(
      reportSettings({
        flags: {},
        env: { KH_EXTERNAL_REPORTING_URL: 'http://s/externalCheckStatus' },
        flagLabel: NO_FLAGS,
      }),
      { files: [], clusterName: undefined },
    );
    expect(plain).toEqual({ kind: 'external', url: 'http://s/externalCheckStatus' });
  });
});
