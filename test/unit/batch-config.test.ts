import { afterAll, describe, expect, it } from 'vitest';
import { MAX_BATCH_CHECKS } from '../../lib/batch/batch-entry.ts';
import { batchFromEvent, batchFromJson, batchFromNames } from '../../lib/config/batch-checks.ts';
import { lambdaRunPlan, runPlan } from '../../lib/config/batch-options.ts';
import { ConfigError } from '../../lib/config/config-error.ts';
import { lambdaRunCheckOptions, runOptions } from '../../lib/config/run-options.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// A batch's list comes from three invokers (repeated --check, KHRUN_BATCH from the tick's Jobs, the runCheck
// Lambda's {"checks": [...]}): each is read into the same entries, a bad one refused naming the entry at
// fault before anything runs, and one check's run is built exactly as before.

const plain = kubeconfigFile();
const teamA = kubeconfigFile({ contextNamespace: 'team-a' });
afterAll(() => {
  plain.remove();
  teamA.remove();
});
const cliEnv = { KUBECONFIG: plain.path, KHRUN_REPORT_HOST: '10.0.0.1' };
const lambdaEnv = {
  KUBECONFIG: plain.path,
  KH_EXTERNAL_REPORTING_URL: 'https://r.example/externalCheckStatus',
};

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('KHRUN_BATCH', () => {
  it('reads a JSON array of namespace and name', () => {
    expect(batchFromJson('[{"namespace":"a","name":"x"},{"namespace":"b","name":"y.z"}]')).toEqual([
      { namespace: 'a', name: 'x' },
      { namespace: 'b', name: 'y.z' },
    ]);
  });

  it.each([
    ['[{"namespace":"a","name":"x"}', 'KHRUN_BATCH', /is not JSON/],
    ['{"namespace":"a","name":"x"}', 'KHRUN_BATCH', /must be a JSON array/],
    ['[]', 'KHRUN_BATCH', /names no check/],
    ['[{"namespace":"a","name":"x"},"y"]', 'KHRUN_BATCH[1]', /must be an object/],
    ['[{"namespace":"a","nme":"x"}]', 'KHRUN_BATCH[0]', /has a field "nme"/],
    ['[{"namespace":"a"}]', 'KHRUN_BATCH[0]', /needs "namespace" and "name"/],
    ['[{"namespace":"a","name":5}]', 'KHRUN_BATCH[0]', /needs "namespace" and "name"/],
    ['[{"namespace":"A","name":"x"}]', 'KHRUN_BATCH[0]', /"A" is not a namespace name/],
    ['[{"namespace":"a","name":"X_"}]', 'KHRUN_BATCH[0]', /"X_" is not a khcheck name/],
    ['[{"namespace":"a","name":"x"},{"namespace":"a","name":"x"}]', 'KHRUN_BATCH[1]', /names a\/x twice/],
  ])('%s is refused at %s', (text, setting, problem) => {
    const error = configError(() => batchFromJson(text));
    expect(error.setting).toBe(setting);
    expect(error.message).toMatch(problem);
    expect(error.remedy).toMatch(/\S/);
  });

  it(`more than ${MAX_BATCH_CHECKS} checks are refused, not split; ${MAX_BATCH_CHECKS} are accepted`, () => {
    const list = (n: number) =>
      JSON.stringify(Array.from({ length: n }, (_, i) => ({ namespace: 'a', name: `c${i}` })));
    expect(batchFromJson(list(MAX_BATCH_CHECKS))).toHaveLength(MAX_BATCH_CHECKS);
    const error = configError(() => batchFromJson(list(MAX_BATCH_CHECKS + 1)));
    expect(error.message).toMatch(`names ${MAX_BATCH_CHECKS + 1} checks, more than the ${MAX_BATCH_CHECKS}`);
    expect(error.message).toMatch(`split it into batches of at most ${MAX_BATCH_CHECKS}`);
  });
});

describe('khrun run: one check or a batch', () => {
  const plan = (
    flags: Record<string, string | boolean>,
    checks: string[],
    env: Record<string, string> = {},
  ) => runPlan({ flags, env: { ...cliEnv, ...env } }, checks);

  it('one --check, --job or --healthcheck is exactly the single run (runOptions), KHRUN_BATCH or not', () => {
    const batchEnv = { KHRUN_BATCH: '[{"namespace":"a","name":"x"}]' };
    for (const [flags, checks] of [
      [{ check: 'c', namespace: 'ns' }, ['c']],
      [{ job: 'j' }, []],
      [{ healthcheck: 'h' }, []],
    ] as const) {
      const single = runOptions({ flags, env: cliEnv });
      for (const env of [{}, batchEnv]) {
        const p = plan(flags, [...checks], env);
        expect(p.kind).toBe('one');
        const { kc: _a, ...options } = p.options as typeof single;
        const { kc: _b, ...expected } = single;
        expect(options).toEqual(expected);
      }
    }
  });

  it('--check given more than once is a batch in one namespace: -n, else CHECK_NAMESPACE, else the context', () => {
    const checks = ['a', 'b'];
    const names = (p: ReturnType<typeof plan>) => (p.kind === 'batch' ? p.options.checks : []);
    expect(names(plan({ namespace: 'ns' }, checks))).toEqual([
      { namespace: 'ns', name: 'a' },
      { namespace: 'ns', name: 'b' },
    ]);
    expect(names(plan({}, checks, { CHECK_NAMESPACE: 'env-ns' }))[0]?.namespace).toBe('env-ns');
    expect(names(plan({}, checks, { KUBECONFIG: teamA.path }))[0]?.namespace).toBe('team-a');
    expect(names(plan({}, checks))[0]?.namespace).toBe('default');
  });

  it('KHRUN_BATCH alone is a batch across namespaces, with the same report and lease settings as one run', () => {
    const p = plan({ output: 'json' }, [], {
      KHRUN_BATCH: '[{"namespace":"a","name":"x"},{"namespace":"b","name":"y"}]',
      KHRUN_LEASE_SECONDS: '45',
      KHRUN_KEEP_FINISHED_PODS: '1',
    });
    expect(p.kind).toBe('batch');
    expect(p.options).toMatchObject({
      checks: [
        { namespace: 'a', name: 'x' },
        { namespace: 'b', name: 'y' },
      ],
      output: 'json',
      leaseMs: 45_000,
      keepFinishedPods: 1,
      report: { kind: 'hosted', host: '10.0.0.1', port: 0 },
    });
  });

  it.each([
    [{ job: 'j' }, ['a', 'b'], {}, '--job', /goes with one object/],
    [{ healthcheck: 'h' }, ['a', 'b'], {}, '--healthcheck', /goes with one object/],
    [{ 'all-namespaces': true }, ['a', 'b'], {}, '--all-namespaces', /one namespace/],
    [{ namespace: 'a,b' }, ['a', 'b'], {}, '--namespace', /one namespace, not a list/],
    [{}, ['a', 'A'], {}, '--check', /"A" is not a khcheck name/],
    [{}, ['a', 'a'], {}, '--check', /names default\/a twice/],
    [
      {},
      [],
      { KHRUN_BATCH: '[{"namespace":"a","name":"x"}]', CHECK_NAME: 'c' },
      'KHRUN_BATCH and CHECK_NAME',
      /both name/,
    ],
    [
      { namespace: 'n' },
      [],
      { KHRUN_BATCH: '[{"namespace":"a","name":"x"}]' },
      '--namespace',
      /name their namespaces/,
    ],
  ])('%j with --check %j and %j is refused at %s', (flags, checks, env, setting, problem) => {
    const error = configError(() => plan(flags, checks, env));
    expect(error.setting).toBe(setting);
    expect(error.message).toMatch(problem);
  });
});

describe('the runCheck Lambda: a batch event', () => {
  const lambda = (event: unknown) => lambdaRunPlan({ event, env: lambdaEnv });

  it('{"checks": [...]} is a batch of khchecks with the same settings as one run; other events as before', () => {
    const p = lambda({
      checks: [
        { kind: 'khcheck', namespace: 'a', checkName: 'x' },
        { namespace: 'b', checkName: 'y' },
      ],
    });
    const single = lambdaRunCheckOptions({ event: { checkName: 'c' }, env: lambdaEnv });
    expect(p).toMatchObject({
      kind: 'batch',
      options: {
        checks: [
          { namespace: 'a', name: 'x' },
          { namespace: 'b', name: 'y' },
        ],
        report: single.report,
        budgetMarginMs: single.budgetMarginMs,
        leaseMs: single.leaseMs,
        cluster: single.cluster,
      },
    });
    for (const event of [
      { checkName: 'c', namespace: 'ns' },
      { kind: 'khjob', checkName: 'j' },
    ]) {
      const one = lambda(event);
      expect(one.kind).toBe('one');
      expect(one.options).toEqual(lambdaRunCheckOptions({ event, env: lambdaEnv }));
    }
  });

  it.each([
    [{ checks: [], checkName: 'c' }, '"checkName" in the event', /does not go with "checks"/],
    [{ checks: 'a' }, '"checks" in the event', /must be an array/],
    [{ checks: [] }, '"checks" in the event', /names no check/],
    [
      { checks: [{ kind: 'khjob', namespace: 'a', checkName: 'j' }] },
      '"checks[0]" in the event',
      /kind other than khcheck/,
    ],
    [{ checks: [{ namespace: 'a', name: 'x' }] }, '"checks[0]" in the event', /has a field "name"/],
    [{ checks: [{ namespace: 'a' }] }, '"checks[0]" in the event', /needs "namespace" and "checkName"/],
  ])('%j is refused at %s', (event, setting, problem) => {
    const error = configError(() => lambda(event));
    expect(error.setting).toBe(setting);
    expect(error.message).toMatch(problem);
    expect(error.remedy).toMatch(/\S/);
  });

  it('a batch event without KH_EXTERNAL_REPORTING_URL is refused as one run is', () => {
    const error = configError(() =>
      lambdaRunPlan({
        event: { checks: [{ namespace: 'a', checkName: 'x' }] },
        env: { KUBECONFIG: plain.path },
      }),
    );
    expect(error.setting).toBe('KH_EXTERNAL_REPORTING_URL');
  });

  it('the event list and the --check list validate as KHRUN_BATCH does', () => {
    expect(batchFromEvent([{ namespace: 'a', checkName: 'x' }])).toEqual(
      batchFromJson('[{"namespace":"a","name":"x"}]'),
    );
    expect(batchFromNames(['x'], 'a')).toEqual([{ namespace: 'a', name: 'x' }]);
  });
});
