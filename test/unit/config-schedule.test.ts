import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import { syncOptions } from '../../lib/config/sync-options.ts';
import { lambdaTickOptions, tickOptions } from '../../lib/config/tick-options.ts';
import { DEFAULT_DUE_TIMINGS } from '../../lib/schedule/due.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// The runner namespace (where khrun is installed: the khrun-runner PodTemplate, the tick's Jobs) is its own
// setting, never the kubeconfig context's namespace (`default` on the local cluster, a person's team
// namespace on a laptop).

const ctx = kubeconfigFile({ contextNamespace: 'team-a' });
afterAll(() => ctx.remove());

const tick = (env: Record<string, string>, flags: Record<string, string> = {}) =>
  tickOptions({ flags, env: { KUBECONFIG: ctx.path, ...env } });
const sync = (env: Record<string, string>, flags: Record<string, string> = {}) =>
  syncOptions({ flags, env: { KUBECONFIG: ctx.path, ...env } });
const lambdaEnv = {
  KUBECONFIG: ctx.path,
  RUN_CHECK_FUNCTION: 'khrun-prod-runCheck',
  AWS_REGION: 'eu-west-1',
};
const lambdaTick = (env: Record<string, string>) => lambdaTickOptions({ env: { ...lambdaEnv, ...env } });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

const runnerNamespaceOf = (options: ReturnType<typeof tick>) =>
  options.dispatch.kind === 'job' ? options.dispatch.template.namespace : undefined;

describe('runner namespace: --runner-namespace, KHRUN_NAMESPACE, POD_NAMESPACE, khrun', () => {
  it.each([
    [{}, {}, 'khrun'],
    [{ POD_NAMESPACE: 'pod-ns' }, {}, 'pod-ns'],
    [{ POD_NAMESPACE: 'pod-ns', KHRUN_NAMESPACE: 'khrun-ns' }, {}, 'khrun-ns'],
    [{ POD_NAMESPACE: 'pod-ns', KHRUN_NAMESPACE: 'khrun-ns' }, { 'runner-namespace': 'flag-ns' }, 'flag-ns'],
  ])('env %j, flags %j: %s, for tick and sync alike', (env, flags, expected) => {
    expect(runnerNamespaceOf(tick(env, flags))).toBe(expected);
    expect(sync(env, flags).template.namespace).toBe(expected);
  });

  it('is never the kubeconfig context namespace', () => {
    expect(runnerNamespaceOf(tick({}))).toBe('khrun');
    expect(sync({}).template).toEqual({ namespace: 'khrun', name: 'khrun-runner' });
  });

  it("keeps the older flags as aliases: tick's --job-namespace, sync's --template-namespace", () => {
    expect(runnerNamespaceOf(tick({ KHRUN_NAMESPACE: 'x' }, { 'job-namespace': 'old' }))).toBe('old');
    expect(sync({ KHRUN_NAMESPACE: 'x' }, { 'template-namespace': 'old' }).template.namespace).toBe('old');
  });

  it('rejects a bad name, naming where it came from', () => {
    expect(configError(() => tick({ KHRUN_NAMESPACE: 'Kube_Health' })).setting).toBe('KHRUN_NAMESPACE');
    expect(configError(() => sync({}, { 'runner-namespace': '-x' })).setting).toBe('--runner-namespace');
    expect(configError(() => sync({}, { 'pod-template': 'No' })).setting).toBe('--pod-template');
  });
});

describe('tick options: the CLI and the tick Lambda agree', () => {
  it('same defaults: every namespace, the due timings', () => {
    const fromCli = tick({});
    const fromLambda = lambdaTick({});
    for (const options of [fromCli, fromLambda]) {
      expect(options.scope).toBe('all');
      expect(options.timings).toEqual(DEFAULT_DUE_TIMINGS);
      expect(options.logLevel).toBe('INFO');
    }
    expect(fromLambda.dispatch).toEqual({
      kind: 'lambda',
      functionName: 'khrun-prod-runCheck',
      region: 'eu-west-1',
      endpoint: undefined,
    });
  });

  it('same variables: KHRUN_NAMESPACES, KHRUN_FIRST_RUN_JITTER (0s turns it off), KHRUN_DISPATCH_TTL', () => {
    const env = { KHRUN_NAMESPACES: 'a, b', KHRUN_FIRST_RUN_JITTER: '0s', KHRUN_DISPATCH_TTL: '90s' };
    for (const options of [tick(env), lambdaTick(env)]) {
      expect(options.scope).toEqual({ namespaces: ['a', 'b'] });
      expect(options.timings.maxFirstRunJitterMs).toBe(0);
      expect(options.timings.dispatchTtlMs).toBe(90_000);
    }
  });

  it.each([
    ['KHRUN_FIRST_RUN_JITTER', '1 minute'],
    ['KHRUN_FIRST_RUN_JITTER', '-1m'],
    ['KHRUN_DISPATCH_TTL', '0s'],
    ['KHRUN_DISPATCH_TTL', 'abc'],
    ['KHRUN_NAMESPACES', 'a,B'],
    ['KHRUN_LAMBDA_ENDPOINT', 'not a url'],
  ])('%s=%s is rejected by both, naming the variable', (name, value) => {
    const cliEnv = name === 'KHRUN_LAMBDA_ENDPOINT' ? { ...lambdaEnv, KHRUN_DISPATCH: 'lambda' } : {};
    for (const error of [
      configError(() => tick({ ...cliEnv, [name]: value })),
      configError(() => lambdaTick({ [name]: value })),
    ]) {
      expect(error.setting).toBe(name);
      expect(error.message).toContain(`${name}="${value}"`);
    }
  });

  it('lambda dispatch needs the function and the region, from the CLI as from the Lambda', () => {
    expect(configError(() => tick({}, { mode: 'lambda' })).message).toBe(
      '--function: the runCheck function to invoke is required; give --function or RUN_CHECK_FUNCTION',
    );
    expect(configError(() => lambdaTick({ RUN_CHECK_FUNCTION: '' })).setting).toBe('RUN_CHECK_FUNCTION');
    expect(configError(() => lambdaTick({ AWS_REGION: '' })).setting).toBe('AWS_REGION');
    expect(lambdaTick({ AWS_REGION: '', AWS_DEFAULT_REGION: 'us-east-1' }).dispatch.region).toBe('us-east-1');
    expect(tick({ ...lambdaEnv }, { mode: 'lambda' }).dispatch).toEqual(lambdaTick({}).dispatch);
  });

  it('mode and output are checked words', () => {
    expect(configError(() => tick({ KHRUN_DISPATCH: 'cron' })).message).toBe(
      'KHRUN_DISPATCH="cron": must be job or lambda; the default is job',
    );
    expect(configError(() => sync({}, { output: 'table' })).setting).toBe('--output');
  });
});

describe('tick and sync scope: -n A,B or -A, the same as serve and status', () => {
  it('-n takes a list; -A means every namespace, over KHRUN_NAMESPACES; neither: KHRUN_NAMESPACES, else all', () => {
    for (const build of [tick, sync]) {
      expect(build({}, { namespace: 'a,b' }).scope).toEqual({ namespaces: ['a', 'b'] });
      expect(build({ KHRUN_NAMESPACES: 'x' }, {}).scope).toEqual({ namespaces: ['x'] });
      expect(build({ KHRUN_NAMESPACES: 'x' }, { namespace: 'a' }).scope).toEqual({ namespaces: ['a'] });
      expect(
        (build === tick ? tickOptions : syncOptions)({
          flags: { 'all-namespaces': true },
          env: { KUBECONFIG: ctx.path, KHRUN_NAMESPACES: 'x' },
        }).scope,
      ).toBe('all');
      expect(build({}, {}).scope).toBe('all');
      // The old spelling reads the same (the CLI warns about it).
      expect(build({}, { namespaces: 'old' }).scope).toEqual({ namespaces: ['old'] });
    }
  });

  it('-n with -A contradicts itself', () => {
    const error = configError(() =>
      syncOptions({ flags: { namespace: 'a', 'all-namespaces': true }, env: { KUBECONFIG: ctx.path } }),
    );
    expect(error.message).toBe(
      '--all-namespaces: contradicts --namespace="a"; give -n NS[,NS] for some namespaces or -A for all, not both',
    );
  });

  it('-o: tick text|json|yaml, sync text|yaml|json', () => {
    expect(tick({}, { output: 'yaml' }).output).toBe('yaml');
    expect(sync({}, { output: 'json' }).output).toBe('json');
    expect(configError(() => tick({}, { output: 'wide' })).setting).toBe('--output');
  });
});
