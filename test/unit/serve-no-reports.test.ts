import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import { serveOptions } from '../../lib/config/serve-options.ts';
import { authorizeReport } from '../../lib/report/authorize-report.ts';
import { parseReportPath, reportKeyOf, signedReportUrl } from '../../lib/report/report-token.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// `khrun serve --no-reports`: the status server of the kustomization's default install, which has no report
// key Secret (kustomize cannot make a random one). It starts without a key and refuses every report.

const ctx = kubeconfigFile();
afterAll(() => ctx.remove());
const KEY = 'f'.repeat(64);

const serve = (env: Record<string, string>, flags: Record<string, string | boolean> = {}) =>
  serveOptions({ flags, env: { KUBECONFIG: ctx.path, ...env } });

function refusal(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('khrun serve --no-reports', () => {
  it('starts without a report key, with the status routes, and refuses unsigned reports', () => {
    const options = serve({}, { 'no-reports': true });
    expect(options.reportKey).toBeUndefined();
    expect(options.unsigned).toBe('refuse');
    expect(options.status).toBe(true);
    expect(options.trigger).toBeUndefined();
    // Without the flag the same environment is refused: a report server needs its key.
    expect(refusal(() => serve({})).setting).toBe('KHRUN_REPORT_KEY_FILE');
  });

  it.each([
    [{ KHRUN_REPORT_KEY: KEY }, {}, /a report key/],
    [{}, { 'allow-unsigned-reports': true }, /--allow-unsigned-reports/],
    [
      { KHRUN_ALLOW_UNSIGNED_REPORTS: 'true' },
      {},
      /--allow-unsigned-reports \(KHRUN_ALLOW_UNSIGNED_REPORTS\)/,
    ],
    [{}, { 'no-status': true }, /and --no-status leave nothing to serve/],
    [{ KHRUN_TRIGGER_TOKEN: 't'.repeat(32) }, {}, /the run trigger \(KHRUN_TRIGGER_TOKEN is set\)/],
  ])('refuses %j %j, which contradict it', (env, flags, message) => {
    const error = refusal(() => serve(env, { 'no-reports': true, ...flags }));
    expect(error.setting).toBe('--no-reports');
    expect(error.message).toMatch(message);
  });

  it('every report is refused before its body is read, saying the server takes none', () => {
    const access = { key: undefined, unsigned: 'refuse' as const, scope: 'all' as const };
    const nowMs = Date.UTC(2026, 0, 1);
    const run = { namespace: 'a', checkName: 'x', uuid: 'u-1', deadlineMs: nowMs + 60_000 };
    const signed = parseReportPath(signedReportUrl('', reportKeyOf(KEY), run));
    expect(signed.kind).toBe('signed');
    for (const path of [parseReportPath(''), signed]) {
      const answer = authorizeReport(access, path, { headerUuid: 'u-1', sourceIp: '10.0.0.1', nowMs });
      expect(answer).toEqual({
        ok: false,
        reason: expect.stringMatching(/^this server takes no reports \(`khrun serve --no-reports`/),
      });
    }
  });
});
