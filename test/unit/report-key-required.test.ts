import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import { lambdaReportOptions } from '../../lib/config/lambda-report-options.ts';
import { serveOptions } from '../../lib/config/serve-options.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// `khrun serve` and the report Lambda fail closed: without a report key they start only when unsigned
// reports are chosen explicitly.

const ctx = kubeconfigFile();
afterAll(() => ctx.remove());
const KEY = 'f'.repeat(64);

const serve = (env: Record<string, string>, flags: Record<string, string | boolean> = {}) =>
  serveOptions({ flags, env: { KUBECONFIG: ctx.path, ...env } });
const report = (env: Record<string, string>) =>
  lambdaReportOptions({ env: { KUBECONFIG: ctx.path, ...env } });

function refusal(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('a shared report endpoint without a report key', () => {
  it('`khrun serve` refuses to start, saying what to set', () => {
    const error = refusal(() => serve({}));
    expect(error.setting).toBe('KHRUN_REPORT_KEY_FILE');
    expect(error.message).toMatch(/^KHRUN_REPORT_KEY_FILE: and KHRUN_REPORT_KEY are both unset: /);
    expect(error.message).toContain('every unsigned report it is sent costs the API server a pod LIST');
    expect(error.message).toContain('set KHRUN_REPORT_KEY_FILE to a file holding the key');
    expect(error.message).toContain('openssl rand -hex 32');
    expect(error.message).toMatch(
      /or, to take only v2-style unsigned reports anyway, set --allow-unsigned-reports or KHRUN_ALLOW_UNSIGNED_REPORTS=true$/,
    );
  });

  it('the report Lambda refuses too, naming its SSM parameter first and only the variable (it has no flags)', () => {
    const error = refusal(() => report({}));
    expect(error.setting).toBe('KHRUN_REPORT_KEY_PARAMETER');
    expect(error.message).toMatch(
      /^KHRUN_REPORT_KEY_PARAMETER: is unset, and so are KHRUN_REPORT_KEY_FILE and KHRUN_REPORT_KEY: /,
    );
    expect(error.message).toContain('every unsigned report it is sent costs the API server a pod LIST');
    expect(error.message).toContain(
      'set KHRUN_REPORT_KEY_PARAMETER to the name of the SSM SecureString parameter holding the key',
    );
    expect(error.message).toContain(
      '`aws ssm put-parameter --name /khrun/report-key --type SecureString --value "$(openssl rand -hex 32)"`',
    );
    expect(error.message).toMatch(/set KHRUN_ALLOW_UNSIGNED_REPORTS=true$/);
    expect(error.message).not.toContain('--allow-unsigned-reports');
  });

  it('an explicit KHRUN_REPORT_UNSIGNED is no opt-in, nor is KHRUN_ALLOW_UNSIGNED_REPORTS=false', () => {
    expect(refusal(() => serve({ KHRUN_REPORT_UNSIGNED: 'header' })).setting).toBe('KHRUN_REPORT_KEY_FILE');
    expect(refusal(() => serve({ KHRUN_ALLOW_UNSIGNED_REPORTS: 'false' })).setting).toBe(
      'KHRUN_REPORT_KEY_FILE',
    );
    expect(refusal(() => report({ KHRUN_ALLOW_UNSIGNED_REPORTS: 'no' })).setting).toBe(
      'KHRUN_REPORT_KEY_PARAMETER',
    );
    expect(refusal(() => serve({ KHRUN_ALLOW_UNSIGNED_REPORTS: 'maybe' })).setting).toBe(
      'KHRUN_ALLOW_UNSIGNED_REPORTS',
    );
  });

  it('another wrong setting is named first', () => {
    expect(refusal(() => serve({}, { port: 'http' })).setting).toBe('--port');
    expect(refusal(() => report({ KHRUN_NAMESPACES: 'a,,Team' })).setting).toBe('KHRUN_NAMESPACES');
  });

  it('starts unsigned when that is chosen: the flag or the variable', () => {
    expect(serve({}, { 'allow-unsigned-reports': true })).toMatchObject({
      reportKey: undefined,
      unsigned: 'header-and-ip',
    });
    expect(serve({ KHRUN_ALLOW_UNSIGNED_REPORTS: 'true' })).toMatchObject({ reportKey: undefined });
    expect(report({ KHRUN_ALLOW_UNSIGNED_REPORTS: 'true' })).toMatchObject({
      reportKey: undefined,
      unsigned: 'header',
    });
  });

  it('with a key it starts, refusing unsigned reports by default', () => {
    expect(serve({ KHRUN_REPORT_KEY: KEY })).toMatchObject({ unsigned: 'refuse' });
    expect(report({ KHRUN_REPORT_KEY: KEY })).toMatchObject({ unsigned: 'refuse' });
    expect(serve({ KHRUN_REPORT_KEY: KEY }).reportKey).toBeDefined();
  });
});
