import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import { runOptions } from '../../lib/config/run-options.ts';
import { DEFAULT_RUN_JOB_OPTIONS, runJobSpec } from '../../lib/schedule/run-job.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

const plain = kubeconfigFile();
afterAll(() => plain.remove());
const env = { KUBECONFIG: plain.path, KHRUN_REPORT_HOST: '10.0.0.1' };

describe('khrun run --job', () => {
  it('names the khjob by flag or KHJOB_NAME; the engine runs it under its name', () => {
    expect(runOptions({ flags: { job: 'migrate' }, env }).target).toMatchObject({
      kind: 'khjob',
      name: 'migrate',
    });
    expect(runOptions({ flags: {}, env: { ...env, KHJOB_NAME: 'from-env' } }).target).toMatchObject({
      kind: 'khjob',
      name: 'from-env',
    });
    expect(runOptions({ flags: { check: 'dns' }, env }).target.kind).toBe('khcheck');
  });

  it.each([
    {
      flags: { job: 'a', check: 'b' },
      extra: {},
      what: /--job and --check="a, b": name both a khjob and a khcheck; a run is one of them; give either --job NAME/,
    },
    { flags: { job: 'a' }, extra: { CHECK_NAME: 'b' }, what: /--job and CHECK_NAME/ },
    { flags: { job: 'Not_A_Name' }, extra: {}, what: /--job="Not_A_Name": is not a khjob name/ },
  ])('refuses $flags $extra with a message saying what to do', ({ flags, extra, what }) => {
    let error: unknown;
    try {
      runOptions({ flags, env: { ...env, ...extra } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(what);
  });

  it("the tick's runner Job for a khjob sets KHJOB_NAME, never CHECK_NAME", () => {
    const spec = runJobSpec(
      { spec: { containers: [{ name: 'runner', image: 'khrun', env: [{ name: 'POD_NAME', value: 'x' }] }] } },
      { namespace: 'team', name: 'migrate', timeoutMs: 120_000, kind: 'khjob' },
      DEFAULT_RUN_JOB_OPTIONS,
    );
    const names = spec.template.spec?.containers[0]?.env?.map((e) => e.name);
    expect(names).toEqual(['POD_NAME', 'KHJOB_NAME', 'CHECK_NAMESPACE']);
  });
});
