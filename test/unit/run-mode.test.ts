import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runPlan } from '../../lib/config/batch-options.ts';
import { ConfigError } from '../../lib/config/config-error.ts';
import { withReportHost } from '../../lib/config/kubeconfig-report-host.ts';
import { decideRunMode } from '../../lib/config/run-mode.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// Where `khrun run` runs one object: here when checker pods can reach this process (or report elsewhere),
// else as a runner Job in the cluster; --local and --in-cluster choose. A setting only a run here uses is
// refused for a run in the cluster rather than silently ignored.

const plain = kubeconfigFile({ contextNamespace: 'team-a' });
const local = kubeconfigFile();
writeFileSync(local.path, withReportHost(readFileSync(local.path, 'utf8'), '10.200.0.1'));
afterAll(() => {
  plain.remove();
  local.remove();
});

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('decideRunMode', () => {
  it.each([
    [{ inCluster: false, local: false, reportAddress: false }, 'in-cluster'],
    [{ inCluster: false, local: false, reportAddress: true }, 'local'],
    [{ inCluster: true, local: false, reportAddress: true }, 'in-cluster'],
    [{ inCluster: false, local: true, reportAddress: false }, 'local'],
  ] as const)('%o → %s', (input, mode) => {
    expect(decideRunMode(input)).toBe(mode);
  });

  it('refuses --local with --in-cluster', () => {
    const error = configError(() => decideRunMode({ inCluster: true, local: true, reportAddress: true }));
    expect(error.message).toMatch(/^--in-cluster: contradicts --local; give --local to run here/);
  });
});

describe('khrun run: here or in the cluster', () => {
  const plan = (flags: Record<string, string | boolean>, env: Record<string, string> = {}) =>
    runPlan({ flags: { check: 'c', ...flags }, env: { KUBECONFIG: plain.path, ...env } }, ['c']);

  it('with no report host anywhere, a runner Job from khrun-runner in khrun (the default install)', () => {
    const p = plan({ output: 'json' });
    expect(p.kind).toBe('in-cluster');
    if (p.kind !== 'in-cluster') return;
    expect(p.options).toMatchObject({
      target: { kind: 'khcheck', namespace: 'team-a', name: 'c' },
      template: { namespace: 'khrun', name: 'khrun-runner' },
      output: 'json',
    });
  });

  it('the same for --job and --healthcheck, in the namespace -n names', () => {
    for (const [flags, kind] of [
      [{ job: 'j' }, 'khjob'],
      [{ healthcheck: 'h' }, 'healthcheck'],
    ] as const) {
      const p = runPlan({ flags: { ...flags, namespace: 'ns' }, env: { KUBECONFIG: plain.path } });
      expect(p.kind).toBe('in-cluster');
      expect(p.options).toMatchObject({ target: { kind, namespace: 'ns' } });
    }
  });

  it('where khrun is installed: --runner-namespace, else KHRUN_NAMESPACE; --pod-template', () => {
    expect(plan({ 'runner-namespace': 'ops', 'pod-template': 'runner2' }).options).toMatchObject({
      template: { namespace: 'ops', name: 'runner2' },
    });
    expect(plan({}, { KHRUN_NAMESPACE: 'khrun' }).options).toMatchObject({
      template: { namespace: 'khrun' },
    });
    expect(configError(() => plan({ 'runner-namespace': 'Not_A_Namespace' })).setting).toBe(
      '--runner-namespace',
    );
  });

  it('runs here when a report host is found: a flag, a variable, POD_IP, the local cluster kubeconfig, or an external URL', () => {
    expect(plan({ 'report-host': '10.0.0.9' }).kind).toBe('one');
    expect(plan({}, { KHRUN_REPORT_HOST: '10.0.0.9' }).kind).toBe('one');
    expect(plan({}, { POD_IP: '10.1.0.5' }).kind).toBe('one');
    expect(plan({}, { KUBECONFIG: local.path }).kind).toBe('one');
    expect(plan({}, { KH_EXTERNAL_REPORTING_URL: 'http://kuberhealthy/externalCheckStatus' }).kind).toBe(
      'one',
    );
  });

  it('--in-cluster wins over a report host; --local without one says what to set', () => {
    expect(plan({ 'in-cluster': true }, { KUBECONFIG: local.path }).kind).toBe('in-cluster');
    expect(plan({ 'in-cluster': true }, { POD_IP: '10.1.0.5' }).kind).toBe('in-cluster');
    const error = configError(() => plan({ local: true }));
    expect(error.setting).toBe('KHRUN_REPORT_HOST');
    expect(error.message).toContain('pass --report-host or set KHRUN_REPORT_HOST');
  });

  it.each([
    [{ 'in-cluster': true, 'report-host': 'h' }, {}, '--report-host'],
    [{ 'in-cluster': true, 'report-port': '9000' }, {}, '--report-port'],
    [{ 'report-port': '9000' }, {}, '--report-port'],
    [{ 'take-over': true }, {}, '--take-over'],
    [{}, { KHRUN_TAKE_OVER: 'true' }, 'KHRUN_TAKE_OVER'],
  ] as const)('refuses %o %o in the cluster, naming %s', (flags, env, setting) => {
    const error = configError(() => plan(flags, env));
    expect(error.setting).toBe(setting);
    expect(error.message).toContain('applies to a run in this process (--local)');
    expect(error.remedy).toMatch(/--local/);
  });

  it('KHRUN_TAKE_OVER=false is no reason to refuse', () => {
    expect(plan({}, { KHRUN_TAKE_OVER: 'false' }).kind).toBe('in-cluster');
  });

  it('a batch runs here only: --in-cluster with --check twice is refused', () => {
    const error = configError(() =>
      runPlan({ flags: { 'in-cluster': true, check: 'b' }, env: { KUBECONFIG: plain.path } }, ['a', 'b']),
    );
    expect(error.setting).toBe('--in-cluster');
    expect(error.message).toMatch(/runs one object/);
  });

  it('a missing check name is refused before the kubeconfig is read, as before', () => {
    const error = configError(() => runPlan({ flags: {}, env: { KUBECONFIG: '/nonexistent' } }));
    expect(error.message).toMatch(/the name of the khcheck to run/);
  });
});
