import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import { serveOptions } from '../../lib/config/serve-options.ts';
import { lambdaTriggerOptions } from '../../lib/config/trigger-options.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

const ctx = kubeconfigFile({ contextNamespace: 'team-a' });
const dir = mkdtempSync(join(tmpdir(), 'khrun-trigger-config-'));
afterAll(() => {
  ctx.remove();
  rmSync(dir, { recursive: true, force: true });
});

const TOKEN = 'f'.repeat(64);
const serve = (env: Record<string, string>, flags: Record<string, string | boolean> = {}) =>
  serveOptions({ flags, env: { KUBECONFIG: ctx.path, KHRUN_ALLOW_UNSIGNED_REPORTS: 'true', ...env } });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('the run trigger of khrun serve', () => {
  it('is off without a token: never open', () => {
    expect(serve({}).trigger).toBeUndefined();
    expect(serve({ KHRUN_TRIGGER_TOKEN: '' }).trigger).toBeUndefined();
  });

  it('takes the token from a file (a mounted Secret, trailing newline and all) or a variable', () => {
    const file = join(dir, 'token');
    writeFileSync(file, `${TOKEN}\n`);
    expect(serve({ KHRUN_TRIGGER_TOKEN_FILE: file, POD_IP: '10.1.2.3' }).trigger).toEqual({
      token: TOKEN,
      maxRuns: 4,
      maxWaitMs: 300_000,
      reportTo: { host: '10.1.2.3' },
      leaseMs: 150_000,
    });
    expect(serve({ KHRUN_TRIGGER_TOKEN: TOKEN, POD_IP: '10.1.2.3' }).trigger?.token).toBe(TOKEN);
  });

  it('sends checker pods to this server: the reporting URL, else a specific --host, else POD_IP', () => {
    const url = 'http://khrun-serve.kuberhealthy.svc:8080/externalCheckStatus';
    const base = { KHRUN_TRIGGER_TOKEN: TOKEN };
    expect(serve({ ...base, KH_EXTERNAL_REPORTING_URL: url, POD_IP: '10.1.2.3' }).trigger?.reportTo).toEqual({
      url,
    });
    expect(serve({ ...base, POD_IP: '10.1.2.3' }, { host: '10.9.9.9' }).trigger?.reportTo).toEqual({
      host: '10.9.9.9',
    });
    expect(serve({ ...base, POD_IP: '10.1.2.3' }, { host: '::' }).trigger?.reportTo).toEqual({
      host: '10.1.2.3',
    });
    const error = configError(() => serve(base));
    expect(error.setting).toBe('KH_EXTERNAL_REPORTING_URL');
    expect(error.message).toMatch(/--host 0\.0\.0\.0 is no address they can reach/);
  });

  it('takes the limits', () => {
    const trigger = serve({
      KHRUN_TRIGGER_TOKEN: TOKEN,
      POD_IP: '10.1.2.3',
      KHRUN_TRIGGER_MAX_RUNS: '1',
      KHRUN_TRIGGER_MAX_WAIT_SECONDS: '20',
      KHRUN_LEASE_SECONDS: '15',
      KHRUN_KEEP_FINISHED_PODS: '0',
    }).trigger;
    expect(trigger).toMatchObject({ maxRuns: 1, maxWaitMs: 20_000, leaseMs: 15_000, keepFinishedPods: 0 });
  });

  it.each([
    [{ KHRUN_TRIGGER_TOKEN: 'short' }, 'KHRUN_TRIGGER_TOKEN', /5 characters, too short/],
    [
      { KHRUN_TRIGGER_TOKEN: `${'a'.repeat(10)} ${'b'.repeat(10)}` },
      'KHRUN_TRIGGER_TOKEN',
      /spaces or characters/,
    ],
    [{ KHRUN_TRIGGER_TOKEN: `${'a'.repeat(20)}é` }, 'KHRUN_TRIGGER_TOKEN', /outside printable ASCII/],
    [{ KHRUN_TRIGGER_TOKEN: TOKEN, KHRUN_TRIGGER_TOKEN_FILE: '/x' }, 'KHRUN_TRIGGER_TOKEN_FILE', /both set/],
    [
      { KHRUN_TRIGGER_TOKEN_FILE: '/nonexistent/token' },
      'KHRUN_TRIGGER_TOKEN_FILE',
      /cannot be read \(ENOENT\)/,
    ],
    [{ KHRUN_TRIGGER_TOKEN: TOKEN, KHRUN_TRIGGER_MAX_RUNS: '0' }, 'KHRUN_TRIGGER_MAX_RUNS', /at least 1/],
    [{ KHRUN_TRIGGER_MAX_RUNS: 'many' }, 'KHRUN_TRIGGER_MAX_RUNS', /whole number/],
    [{ KHRUN_TRIGGER_MAX_WAIT_SECONDS: '-1' }, 'KHRUN_TRIGGER_MAX_WAIT_SECONDS', /positive number/],
    [
      { KHRUN_TRIGGER_TOKEN: TOKEN, KHRUN_KEEP_FINISHED_PODS: '11' },
      'KHRUN_KEEP_FINISHED_PODS',
      /more than 10 finished checker pods/,
    ],
  ])('refuses %j, naming %s', (env, setting, problem) => {
    const error = configError(() => serve({ POD_IP: '10.1.2.3', ...env }));
    expect(error.setting).toContain(setting);
    expect(error.message).toMatch(problem);
  });

  it('never puts the token in a message', () => {
    const secret = 'sekrit-but-short';
    writeFileSync(join(dir, 'short'), secret.slice(0, 10));
    for (const env of [
      { KHRUN_TRIGGER_TOKEN: secret.slice(0, 10) } as Record<string, string>,
      { KHRUN_TRIGGER_TOKEN_FILE: join(dir, 'short') },
    ]) {
      expect(configError(() => serve({ POD_IP: '10.1.2.3', ...env })).message).not.toContain(
        secret.slice(0, 10),
      );
    }
  });
});

describe('the trigger Lambda', () => {
  it('dispatches to RUN_CHECK_FUNCTION in AWS_REGION, for KHRUN_NAMESPACES', () => {
    expect(
      lambdaTriggerOptions({
        env: { RUN_CHECK_FUNCTION: 'khrun-prod-runCheck', AWS_REGION: 'eu-west-1', KHRUN_NAMESPACES: 'a,b' },
      }),
    ).toEqual({
      scope: { namespaces: ['a', 'b'] },
      dispatch: { functionName: 'khrun-prod-runCheck', region: 'eu-west-1', endpoint: undefined },
      logLevel: 'INFO',
    });
    expect(configError(() => lambdaTriggerOptions({ env: { AWS_REGION: 'eu-west-1' } })).setting).toBe(
      'RUN_CHECK_FUNCTION',
    );
  });
});
