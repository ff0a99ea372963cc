import { afterAll, describe, expect, it } from 'vitest';
import { clusterAccess } from '../../lib/config/cluster-access.ts';
import { ConfigError } from '../../lib/config/config-error.ts';
import { lambdaReportOptions } from '../../lib/config/lambda-report-options.ts';
import { serveOptions } from '../../lib/config/serve-options.ts';
import { describeOptions, lambdaStatusOptions, statusOptions } from '../../lib/config/status-options.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

const ctx = kubeconfigFile({ contextNamespace: 'team-a' });
afterAll(() => ctx.remove());

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

const serve = (env: Record<string, string>, flags: Record<string, string | boolean> = {}) =>
  serveOptions({ flags, env: { KUBECONFIG: ctx.path, KHRUN_ALLOW_UNSIGNED_REPORTS: 'true', ...env } });
const report = (env: Record<string, string>) =>
  lambdaReportOptions({ env: { KUBECONFIG: ctx.path, KHRUN_ALLOW_UNSIGNED_REPORTS: 'true', ...env } });
const lambdaStatus = (env: Record<string, string>) =>
  lambdaStatusOptions({ env: { KUBECONFIG: ctx.path, ...env } });

describe('serve, the report Lambda and the status Lambda', () => {
  it('defaults', () => {
    expect(serve({})).toMatchObject({
      scope: 'all',
      host: '0.0.0.0',
      port: 8080,
      drainMs: 10_000,
      status: true,
      maxBodyBytes: undefined,
      requestTimeoutMs: undefined,
      metrics: { suppressErrorLabel: false, errorLabelMaxBytes: undefined },
      logLevel: 'INFO',
    });
    expect(report({})).toMatchObject({
      scope: 'all',
      reportKey: undefined,
      unsigned: 'header',
      logLevel: 'INFO',
    });
    expect(lambdaStatus({}).metrics).toEqual(serve({}).metrics);
  });

  it('KHRUN_NAMESPACES and the error label settings read the same everywhere', () => {
    const env = {
      KHRUN_NAMESPACES: 'kuberhealthy,team-a',
      KHRUN_SUPPRESS_ERROR_LABEL: 'true',
      KHRUN_ERROR_LABEL_MAX_BYTES: '100',
    };
    for (const options of [serve(env), lambdaStatus(env)]) {
      expect(options.scope).toEqual({ namespaces: ['kuberhealthy', 'team-a'] });
      expect(options.metrics).toEqual({ suppressErrorLabel: true, errorLabelMaxBytes: 100 });
    }
    expect(report(env).scope).toEqual({ namespaces: ['kuberhealthy', 'team-a'] });
    expect(serve({}, { 'no-error-label': true, 'error-label-max-bytes': '7' }).metrics).toEqual({
      suppressErrorLabel: true,
      errorLabelMaxBytes: 7,
    });
  });

  it.each([
    ['KHRUN_SUPPRESS_ERROR_LABEL', 'maybe'],
    ['KHRUN_ERROR_LABEL_MAX_BYTES', '-1'],
    ['KHRUN_ERROR_LABEL_MAX_BYTES', '1e3'],
    ['KHRUN_NAMESPACES', 'a,,Team'],
    ['POWERTOOLS_LOG_LEVEL', 'verbose'],
  ])('%s=%s is rejected by serve and the status Lambda, naming the variable', (name, value) => {
    for (const error of [
      configError(() => serve({ [name]: value })),
      configError(() => lambdaStatus({ [name]: value })),
    ]) {
      expect(error.setting).toBe(name);
      expect(error.message).toContain(`${name}="${value}"`);
    }
  });

  it.each([
    [{ KHRUN_SERVE_PORT: '65536' }, {}, 'KHRUN_SERVE_PORT'],
    [{}, { port: 'http' }, '--port'],
    [{}, { 'drain-seconds': '-1' }, '--drain-seconds'],
    [{}, { 'request-timeout-seconds': '0' }, '--request-timeout-seconds'],
    [{}, { 'max-body-bytes': '0' }, '--max-body-bytes'],
  ])('serve rejects env %j flags %j', (env, flags, setting) => {
    expect(configError(() => serve(env, flags)).setting).toBe(setting);
  });

  it('the report Lambda never identifies pods by source address (they come through NAT)', () => {
    expect(configError(() => report({ KHRUN_REPORT_UNSIGNED: 'header-and-ip' })).problem).toMatch(/NAT/);
  });
});

describe('how a Lambda reaches the cluster', () => {
  const eks = {
    EKS_CLUSTER_NAME: 'prod',
    EKS_ENDPOINT: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com',
    EKS_CA_DATA: 'LS0tLS1CRUdJTi==',
    AWS_REGION: 'eu-west-1',
  };
  const access = (env: Record<string, string>) => clusterAccess({ flags: {}, env });

  it('KUBECONFIG when set, else EKS', () => {
    expect(access({ ...eks, KUBECONFIG: '/k' })).toEqual({ kind: 'kubeconfig', path: '/k' });
    expect(access(eks)).toEqual({
      kind: 'eks',
      clusterName: 'prod',
      endpoint: eks.EKS_ENDPOINT,
      caData: eks.EKS_CA_DATA,
      region: 'eu-west-1',
    });
  });

  it('names the missing or bad EKS variable (serverless.yml writes empty strings for unset params)', () => {
    expect(configError(() => access({ ...eks, EKS_CA_DATA: '' })).message).toBe(
      'EKS_CA_DATA: the cluster CA is required to reach an EKS cluster; deploy with the clusterName, eksEndpoint and eksCaData parameters, or set KUBECONFIG',
    );
    expect(configError(() => access({ ...eks, EKS_ENDPOINT: 'http://x' })).setting).toBe('EKS_ENDPOINT');
    expect(configError(() => access({ ...eks, AWS_REGION: '' })).setting).toBe('AWS_REGION');
    expect(configError(() => access({})).setting).toBe('EKS_CLUSTER_NAME');
  });

  it('every Lambda builder uses it', () => {
    for (const build of [report, lambdaStatus]) {
      expect(build({ KUBECONFIG: '', ...eks }).cluster?.kind).toBe('eks');
    }
  });
});

describe('status and describe', () => {
  it('status: namespaces, output and color (a terminal without NO_COLOR)', () => {
    const status = (flags: Record<string, string>, env: Record<string, string> = {}, terminal = true) =>
      statusOptions({ flags, env: { KUBECONFIG: ctx.path, ...env }, terminal });
    expect(status({ namespace: 'a,b', output: 'wide' })).toMatchObject({
      namespaces: ['a', 'b'],
      output: 'wide',
      color: true,
    });
    expect(status({}, { NO_COLOR: '1' }).color).toBe(false);
    expect(status({}, {}, false)).toMatchObject({ namespaces: [], output: 'table', color: false });
    expect(configError(() => status({ output: 'table2' })).setting).toBe('--output');
    expect(status({ output: 'yaml' }).output).toBe('yaml');
  });

  it('status: -n A,B or -A (the default: every namespace); -w follows changes', () => {
    const status = (flags: Record<string, string | boolean>) =>
      statusOptions({ flags, env: { KUBECONFIG: ctx.path }, terminal: false });
    expect(status({ 'all-namespaces': true }).namespaces).toEqual([]);
    expect(status({}).namespaces).toEqual([]);
    expect(status({ namespace: 'a' })).toMatchObject({ namespaces: ['a'], watch: false });
    expect(status({ watch: true }).watch).toBe(true);
    expect(configError(() => status({ namespace: 'a', 'all-namespaces': true })).setting).toBe(
      '--all-namespaces',
    );
  });

  it('serve: -n A,B, -A, or the old --namespaces', () => {
    expect(serve({}, { namespace: 'a,b' }).scope).toEqual({ namespaces: ['a', 'b'] });
    expect(serve({ KHRUN_NAMESPACES: 'x' }, { 'all-namespaces': true }).scope).toBe('all');
    expect(serve({}, { namespaces: 'old' }).scope).toEqual({ namespaces: ['old'] });
  });

  it('describe: one check, in the check namespace as `khrun run` finds it', () => {
    const describe = (
      positionals: string[],
      flags: Record<string, string> = {},
      env: Record<string, string> = {},
    ) => describeOptions({ flags, env: { KUBECONFIG: ctx.path, ...env }, positionals, terminal: false });
    expect(describe(['c'])).toMatchObject({ name: 'c', namespace: 'team-a' });
    expect(describe(['c'], {}, { CHECK_NAMESPACE: 'env-ns' }).namespace).toBe('env-ns');
    expect(describe(['c'], { namespace: 'flag-ns' }, { CHECK_NAMESPACE: 'env-ns' }).namespace).toBe(
      'flag-ns',
    );
    expect(configError(() => describe([])).problem).toBe('describe takes exactly one check name');
    expect(configError(() => describe(['a', 'b'])).value).toBe('a b');
    expect(configError(() => describe(['c'], { namespace: 'a,b' })).problem).toBe(
      'describe shows one check in one namespace, not a list',
    );
  });
});
