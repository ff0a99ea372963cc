import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import { lambdaRunCheckOptions, runOptions } from '../../lib/config/run-options.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// `khrun run` and the runCheck Lambda build their options with the same getters: the same defaults, and
// the same bad values rejected with a message naming the variable (before, KHRUN_LEASE_SECONDS=abc was a
// NaN lease in the Lambda, so its claim was invisible and its report refused).

const plain = kubeconfigFile();
const teamA = kubeconfigFile({ contextNamespace: 'team-a' });
afterAll(() => {
  plain.remove();
  teamA.remove();
});

const REPORT_URL = 'http://kuberhealthy.kuberhealthy.svc/externalCheckStatus';
const lambdaEnv = { KUBECONFIG: plain.path, KH_EXTERNAL_REPORTING_URL: REPORT_URL };
const cliEnv = { KUBECONFIG: plain.path, KHRUN_REPORT_HOST: '10.0.0.1' };

const cli = (env: Record<string, string>, flags: Record<string, string> = {}) =>
  runOptions({ flags: { check: 'c', ...flags }, env: { ...cliEnv, ...env } });
const lambda = (env: Record<string, string>, event: unknown = { checkName: 'c' }) =>
  lambdaRunCheckOptions({ event, env: { ...lambdaEnv, ...env } });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('run options: the CLI and the runCheck Lambda agree', () => {
  it.each([
    ['KHRUN_LEASE_SECONDS', 'abc'],
    ['KHRUN_LEASE_SECONDS', '0'],
    ['KHRUN_LEASE_SECONDS', '-5'],
    ['KHRUN_LEASE_SECONDS', 'Infinity'],
    ['KHRUN_KEEP_FINISHED_PODS', '-1'],
    ['KHRUN_KEEP_FINISHED_PODS', '11'],
    ['KHRUN_KEEP_FINISHED_PODS', 'all'],
    ['CHECK_NAMESPACE', 'Team_A'],
    ['CHECK_NAME', 'Not A Name'],
    ['POWERTOOLS_LOG_LEVEL', 'LOUD'],
    ['KH_EXTERNAL_REPORTING_URL', 'ftp://example/'],
  ])('%s=%s is rejected by both, naming the variable', (name, value) => {
    const env = name === 'CHECK_NAME' ? { CHECK_NAME: value } : { [name]: value };
    const event = name === 'CHECK_NAME' ? {} : { checkName: 'c' };
    const flags = name === 'CHECK_NAME' ? {} : { check: 'c' };
    for (const error of [
      configError(() => runOptions({ flags, env: { ...cliEnv, ...env } })),
      configError(() => lambda(env, event)),
    ]) {
      expect(error.setting).toBe(name);
      expect(error.value).toBe(value);
      expect(error.message).toContain(`${name}="${value}"`);
    }
  });

  it('the lease message says what to do', () => {
    expect(configError(() => lambda({ KHRUN_LEASE_SECONDS: 'abc' })).message).toBe(
      'KHRUN_LEASE_SECONDS="abc": must be a positive number of seconds; give a number such as 150, or leave it unset for the default (150)',
    );
  });

  it('gives the same defaults: namespace default, lease 150 s, log level INFO', () => {
    const fromCli = cli({});
    const fromLambda = lambda({});
    for (const options of [fromCli, fromLambda]) {
      expect(options).toMatchObject({
        target: { kind: 'khcheck', name: 'c', namespace: 'default' },
        leaseMs: 150_000,
        logLevel: 'INFO',
      });
    }
    expect(lambda({}, { checkName: 'c', namespace: 'ns' }).target.namespace).toBe('ns');
    expect(fromLambda.budgetMarginMs).toBe(30_000);
  });

  it('keeps the default number of finished checker pods unless told, and 0 to 10 when told', () => {
    expect(cli({}).keepFinishedPods).toBeUndefined();
    expect(lambda({}).keepFinishedPods).toBeUndefined();
    expect(cli({ KHRUN_KEEP_FINISHED_PODS: '0' }).keepFinishedPods).toBe(0);
    expect(lambda({ KHRUN_KEEP_FINISHED_PODS: '10' }).keepFinishedPods).toBe(10);
    expect(configError(() => cli({ KHRUN_KEEP_FINISHED_PODS: '11' })).message).toContain('give 0 to 10');
  });

  it('reads the same variables the same way', () => {
    const env = { KHRUN_LEASE_SECONDS: '12.5', CHECK_NAMESPACE: 'team-b', POWERTOOLS_LOG_LEVEL: 'debug' };
    const expected = { target: { namespace: 'team-b' }, leaseMs: 12_500, logLevel: 'DEBUG' };
    expect(cli(env)).toMatchObject(expected);
    expect(lambda(env)).toMatchObject(expected);
    expect(cli({ KH_EXTERNAL_REPORTING_URL: REPORT_URL }).report).toEqual({
      kind: 'external',
      url: REPORT_URL,
    });
    expect(lambda({}).report).toEqual({ kind: 'external', url: REPORT_URL });
  });

  it('check namespace: the flag, else CHECK_NAMESPACE, else the context namespace (CLI only), else default', () => {
    const withContext = (env: Record<string, string>, flags: Record<string, string> = {}) =>
      cli({ KUBECONFIG: teamA.path, ...env }, flags).target.namespace;
    expect(withContext({}, { namespace: 'flag-ns' })).toBe('flag-ns');
    expect(withContext({ CHECK_NAMESPACE: 'env-ns' }, { namespace: 'flag-ns' })).toBe('flag-ns');
    expect(withContext({ CHECK_NAMESPACE: 'env-ns' })).toBe('env-ns');
    expect(withContext({})).toBe('team-a');
    expect(cli({}).target.namespace).toBe('default');
    // The event's namespace is the flag's counterpart; a Lambda has no kubeconfig context.
    expect(
      lambda({ CHECK_NAMESPACE: 'env-ns' }, { checkName: 'c', namespace: 'event-ns' }).target.namespace,
    ).toBe('event-ns');
    expect(lambda({ CHECK_NAMESPACE: 'env-ns' }).target.namespace).toBe('env-ns');
  });

  it('validates settings that need no cluster before reading the kubeconfig', () => {
    const error = configError(() =>
      runOptions({ flags: { check: 'c' }, env: { KUBECONFIG: '/nonexistent', KHRUN_LEASE_SECONDS: 'x' } }),
    );
    expect(error.setting).toBe('KHRUN_LEASE_SECONDS');
    expect(
      configError(() => runOptions({ flags: { check: 'c' }, env: { KUBECONFIG: '/nonexistent' } })).setting,
    ).toBe('KUBECONFIG');
  });

  it('names the missing check by every place it can come from', () => {
    expect(configError(() => runOptions({ flags: {}, env: cliEnv })).message).toBe(
      '--check: the name of the khcheck to run is required; give --check or CHECK_NAME',
    );
    expect(configError(() => lambda({}, {})).message).toBe(
      '"checkName" in the event: the name of the khcheck to run is required; give "checkName" in the event or CHECK_NAME',
    );
    expect(configError(() => lambda({}, { checkName: 'c', namespace: 7 })).setting).toBe(
      '"namespace" in the event',
    );
  });

  it('the Lambda needs KH_EXTERNAL_REPORTING_URL and a non-negative budget margin', () => {
    expect(
      configError(() => lambdaRunCheckOptions({ event: { checkName: 'c' }, env: { KUBECONFIG: plain.path } }))
        .setting,
    ).toBe('KH_EXTERNAL_REPORTING_URL');
    expect(configError(() => lambda({ KHRUN_BUDGET_MARGIN_SECONDS: '-1' })).setting).toBe(
      'KHRUN_BUDGET_MARGIN_SECONDS',
    );
    expect(lambda({ KHRUN_BUDGET_MARGIN_SECONDS: '0' }).budgetMarginMs).toBe(0);
  });

  it('the CLI rejects a bad report port from the flag or the variable', () => {
    expect(configError(() => cli({}, { 'report-port': '70000' })).setting).toBe('--report-port');
    expect(configError(() => cli({ KHRUN_REPORT_PORT: 'http' })).setting).toBe('KHRUN_REPORT_PORT');
    expect(cli({ KHRUN_REPORT_PORT: '8080' }).report).toEqual({
      kind: 'hosted',
      host: '10.0.0.1',
      port: 8080,
    });
  });
});

describe('run: -n is one namespace, -A is an error, -o text|json|yaml', () => {
  it('takes -n NS; a comma list and -A say a run is one check', () => {
    expect(cli({}, { namespace: 'team-b' }).target.namespace).toBe('team-b');
    const list = configError(() => cli({}, { namespace: 'a,b' }));
    expect(list.setting).toBe('--namespace');
    expect(list.message).toBe(
      '--namespace="a,b": a run is one check in one namespace, not a list; give one namespace, such as -n a',
    );
    const all = configError(() =>
      runOptions({ flags: { check: 'c', 'all-namespaces': true }, env: { ...cliEnv } }),
    );
    expect(all.message).toBe(
      '--all-namespaces: a run is one check in one namespace; give -n NS (else CHECK_NAMESPACE, else the kubeconfig context namespace)',
    );
  });

  it('prints text by default, json or yaml with -o', () => {
    expect(cli({}).output).toBe('text');
    expect(cli({}, { output: 'yaml' }).output).toBe('yaml');
    expect(configError(() => cli({}, { output: 'wide' })).message).toBe(
      '--output="wide": must be text, json or yaml; the default is text',
    );
  });
});
