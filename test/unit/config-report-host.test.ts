import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config/config-error.ts';
import {
  REPORT_HOST_EXTENSION,
  reportHostFromKubeconfig,
  withReportHost,
} from '../../lib/config/kubeconfig-report-host.ts';
import { runOptions } from '../../lib/config/run-options.ts';
import { loadKubeConfig } from '../../lib/kube/load-config.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// `khrun run` against `khrun local up` needs no flags: local up records where pods reach this machine in
// the kubeconfig it writes, and the product reads it from there without importing the devkit.

const plain = kubeconfigFile();
const local = kubeconfigFile();
writeFileSync(local.path, withReportHost(readFileSync(local.path, 'utf8'), '10.200.0.1'));
afterAll(() => {
  plain.remove();
  local.remove();
});

const run = (env: Record<string, string>, flags: Record<string, string> = {}) =>
  runOptions({ flags: { check: 'c', ...flags }, env });

describe('the report host', () => {
  it('is recorded as a cluster extension that client-node and kubectl keep loading', () => {
    const doc = JSON.parse(readFileSync(local.path, 'utf8'));
    expect(doc.clusters[0].cluster.extensions).toEqual([
      { name: REPORT_HOST_EXTENSION, extension: { host: '10.200.0.1' } },
    ]);
    expect(loadKubeConfig({ kubeconfig: local.path }).getCurrentCluster()?.server).toBe(
      'https://192.0.2.1:6443',
    );
    // Writing it again replaces it rather than adding a second one.
    const again = JSON.parse(withReportHost(readFileSync(local.path, 'utf8'), '10.200.0.9'));
    expect(again.clusters[0].cluster.extensions).toEqual([
      { name: REPORT_HOST_EXTENSION, extension: { host: '10.200.0.9' } },
    ]);
  });

  it('comes from the kubeconfig when nothing explicit is set', () => {
    expect(run({ KUBECONFIG: local.path }).report).toEqual({ kind: 'hosted', host: '10.200.0.1', port: 0 });
    expect(run({}, { kubeconfig: local.path, 'report-port': '9000' }).report).toEqual({
      kind: 'hosted',
      host: '10.200.0.1',
      port: 9000,
    });
    // A KUBECONFIG list: the file that holds the current cluster.
    expect(reportHostFromKubeconfig([join(plain.dir, 'missing'), local.path], 'test')).toBe('10.200.0.1');
    expect(reportHostFromKubeconfig([local.path], 'other-cluster')).toBeUndefined();
  });

  it('explicit settings win: --report-host, KHRUN_REPORT_HOST, POD_IP; KH_EXTERNAL_REPORTING_URL over all', () => {
    const env = { KUBECONFIG: local.path, POD_IP: '10.1.0.5' };
    expect(run(env).report).toMatchObject({ host: '10.1.0.5' });
    expect(run({ ...env, KHRUN_REPORT_HOST: '10.9.9.9' }).report).toMatchObject({ host: '10.9.9.9' });
    expect(run({ ...env, KHRUN_REPORT_HOST: '10.9.9.9' }, { 'report-host': 'h.local' }).report).toMatchObject(
      {
        host: 'h.local',
      },
    );
    expect(
      run({ ...env, KH_EXTERNAL_REPORTING_URL: 'http://kuberhealthy/externalCheckStatus' }).report,
    ).toEqual({
      kind: 'external',
      url: 'http://kuberhealthy/externalCheckStatus',
    });
  });

  it('without any of them it is a ConfigError that says what to set', () => {
    let error: unknown;
    try {
      run({ KUBECONFIG: plain.path });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).setting).toBe('KHRUN_REPORT_HOST');
    expect((error as ConfigError).message).toMatch(/KH_EXTERNAL_REPORTING_URL/);
  });
});
