import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lambdaRunPlan } from '../../lib/config/batch-options.ts';
import { asksForFleet, cliFleet, fleetSettings, nameList } from '../../lib/config/clusters.ts';
import { ConfigError } from '../../lib/config/config-error.ts';
import { lambdaFleet, memberNamed } from '../../lib/config/lambda-fleet.ts';
import { batchEventCluster, runEventFlags } from '../../lib/config/run-check-event.ts';
import { serveFleetOptions } from '../../lib/config/serve-fleet-options.ts';
import { lambdaStatusOptions, statusOptions } from '../../lib/config/status-options.ts';
import { lambdaTickOptions, tickOptions } from '../../lib/config/tick-options.ts';
import { lambdaTriggerOptions } from '../../lib/config/trigger-options.ts';

const dir = mkdtempSync(join(tmpdir(), 'khrun-fleet-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A kubeconfig with a context per name, each its own cluster; current-context the first unless none. */
function kubeconfig(names: string[], current: string | undefined = names[0]): string {
  const path = join(dir, `kc-${names.join('-')}-${current ?? 'none'}`);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: names.map((n, i) => ({
        name: `c-${n}`,
        cluster: { server: `https://192.0.2.${i + 1}:6443` },
      })),
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: names.map((n) => ({ name: n, context: { cluster: `c-${n}`, user: 'u' } })),
      ...(current ? { 'current-context': current } : {}),
    }),
  );
  return path;
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('the CLI over several clusters: --context A,B and --all-contexts', () => {
  const path = kubeconfig(['prod-eu', 'prod-us', 'staging']);

  it('a fleet is asked for by a comma or --all-contexts; one --context stays one cluster', () => {
    const env = { KUBECONFIG: path };
    expect(asksForFleet({ flags: { context: 'prod-eu' }, env })).toBe(false);
    expect(asksForFleet({ flags: { context: 'prod-eu,prod-us' }, env })).toBe(true);
    expect(asksForFleet({ flags: { 'all-contexts': true }, env })).toBe(true);
    expect(cliFleet({ flags: { context: 'prod-eu' }, env })).toBeUndefined();
  });

  it('loads each context as one --context would, in the order given', () => {
    const clusters = cliFleet({ flags: { context: 'prod-us, prod-eu' }, env: { KUBECONFIG: path } })!;
    expect(clusters.map((c) => c.name)).toEqual(['prod-us', 'prod-eu']);
    expect(clusters.map((c) => c.kc.getCurrentCluster()?.server)).toEqual([
      'https://192.0.2.2:6443',
      'https://192.0.2.1:6443',
    ]);
  });

  it('--all-contexts: every context, also of a kubeconfig without a current context', () => {
    const none = kubeconfig(['a', 'b'], undefined);
    const clusters = cliFleet({ flags: { 'all-contexts': true }, env: { KUBECONFIG: none } })!;
    expect(clusters.map((c) => c.name)).toEqual(['a', 'b']);
    expect(cliFleet({ flags: { 'all-contexts': true, kubeconfig: path }, env: {} })?.length).toBe(3);
  });

  it('refuses an unknown context, an empty or repeated name, both flags, and a kubeconfig it cannot read', () => {
    const env = { KUBECONFIG: path };
    expect(configError(() => cliFleet({ flags: { context: 'prod-eu,nope' }, env })).message).toBe(
      '--context="nope": the kubeconfig has no context "nope"; pick one of `kubectl config get-contexts`',
    );
    expect(configError(() => cliFleet({ flags: { context: 'prod-eu,' }, env })).problem).toBe(
      'has an empty context name',
    );
    expect(configError(() => cliFleet({ flags: { context: 'a,b,a' }, env })).problem).toBe(
      'names context a twice',
    );
    expect(
      configError(() => cliFleet({ flags: { context: 'a,b', 'all-contexts': true }, env })).setting,
    ).toBe('--all-contexts');
    expect(
      configError(() =>
        cliFleet({ flags: { 'all-contexts': true }, env: { KUBECONFIG: join(dir, 'missing') } }),
      ).message,
    ).toMatch(/^KUBECONFIG=".*missing": cannot be used: the file does not exist; check the path/);
  });

  it('bounds: 8 clusters at once and the command deadline by default; flags, then variables', () => {
    const input = (flags: Record<string, string>, env: Record<string, string> = {}) => ({ flags, env });
    expect(fleetSettings(input({}), 45_000)).toEqual({ concurrency: 8, deadlineMs: 45_000 });
    expect(fleetSettings(input({ 'cluster-timeout': '10s', 'cluster-concurrency': '2' }), 1)).toEqual({
      concurrency: 2,
      deadlineMs: 10_000,
    });
    expect(
      fleetSettings(input({}, { KHRUN_CLUSTER_TIMEOUT: '1m', KHRUN_CLUSTER_CONCURRENCY: '3' }), 1),
    ).toEqual({ concurrency: 3, deadlineMs: 60_000 });
    expect(configError(() => fleetSettings(input({ 'cluster-concurrency': '0' }), 1)).setting).toBe(
      '--cluster-concurrency',
    );
    expect(configError(() => fleetSettings(input({ 'cluster-timeout': '10' }), 1)).setting).toBe(
      '--cluster-timeout',
    );
  });

  it('tick, status and serve: one cluster as before, or the fleet with its bounds', () => {
    const env = { KUBECONFIG: path };
    const one = tickOptions({ flags: {}, env });
    expect(one.kc?.getCurrentContext()).toBe('prod-eu');
    expect(one.fleet).toBeUndefined();
    const tick = tickOptions({ flags: { 'all-contexts': true }, env });
    expect(tick.kc).toBeUndefined();
    expect(tick.fleet?.clusters.map((c) => c.name)).toEqual(['prod-eu', 'prod-us', 'staging']);
    expect(tick.fleet?.settings).toEqual({ concurrency: 8, deadlineMs: 45_000 });
    const status = statusOptions({ flags: { context: 'prod-eu,staging' }, env, terminal: false });
    expect(status.fleet?.settings.deadlineMs).toBe(15_000);
    expect(
      configError(() => statusOptions({ flags: { context: 'a,b', watch: true }, env, terminal: false }))
        .setting,
    ).toBe('--watch');
    const serve = serveFleetOptions({
      flags: { context: 'prod-eu,prod-us' },
      env: { ...env, KHRUN_TRIGGER_TOKEN: 'x'.repeat(20) },
    });
    expect(serve?.clusters.map((c) => c.name)).toEqual(['prod-eu', 'prod-us']);
    expect(serve?.trigger).toEqual({
      token: 'x'.repeat(20),
      runner: { namespace: 'khrun', name: 'khrun-runner' },
    });
    expect(serveFleetOptions({ flags: { context: 'prod-eu' }, env })).toBeUndefined();
  });

  it('nameList keeps the order and trims', () => {
    expect(nameList(' a ,b', 'X', 'cluster')).toEqual(['a', 'b']);
  });
});

describe('the Lambdas over KHRUN_CLUSTERS', () => {
  const aws = { AWS_REGION: 'eu-west-1', RUN_CHECK_FUNCTION: 'khrun-runCheck' };

  it('EKS names without KUBECONFIG (endpoint and CA from DescribeCluster), contexts with it', () => {
    const eks = lambdaFleet({ flags: {}, env: { ...aws, KHRUN_CLUSTERS: 'prod-eu,prod_us' } }, 45_000);
    expect(eks?.members).toEqual([
      {
        name: 'prod-eu',
        access: { kind: 'eks', clusterName: 'prod-eu', region: 'eu-west-1', eksEndpoint: undefined },
      },
      {
        name: 'prod_us',
        access: { kind: 'eks', clusterName: 'prod_us', region: 'eu-west-1', eksEndpoint: undefined },
      },
    ]);
    const local = lambdaFleet({ flags: {}, env: { KHRUN_CLUSTERS: 'a.local', KUBECONFIG: '/k' } }, 1);
    expect(local?.members[0]?.access).toEqual({ kind: 'kubeconfig', path: '/k', context: 'a.local' });
    expect(lambdaFleet({ flags: {}, env: aws }, 1)).toBeUndefined();
  });

  it('the notification configuration reaches every cluster of the fleet (tick and runCheck)', () => {
    const notify = {
      KHRUN_NOTIFY_CONFIG: 'channels:\n  am: { type: alertmanager, url: "http://am:9093" }\n',
    };
    const env = { ...aws, KHRUN_CLUSTERS: 'a,b' };
    const tick = lambdaTickOptions({ env: { ...env, ...notify } });
    expect(tick.fleet?.members.map((m) => m.name)).toEqual(['a', 'b']);
    expect([...(tick.notify?.channels.keys() ?? [])]).toEqual(['am']);
    expect(lambdaTickOptions({ env }).notify).toBeUndefined();
    // From the SSM parameter, as the tick Lambda reads it.
    const fromParameter = lambdaTickOptions({
      env: { ...env, KHRUN_NOTIFY_CONFIG_PARAMETER: '/khrun/notify' },
      notifyParameter: { parameter: '/khrun/notify', text: notify.KHRUN_NOTIFY_CONFIG },
    });
    expect(fromParameter.fleet).toBeDefined();
    expect([...(fromParameter.notify?.channels.keys() ?? [])]).toEqual(['am']);
    const run = lambdaRunPlan({
      event: { cluster: 'b', checks: [{ namespace: 'n', checkName: 'x' }] },
      env: {
        ...env,
        ...notify,
        KH_EXTERNAL_REPORTING_URL: 'https://r.lambda-url.eu-west-1.on.aws/externalCheckStatus',
        KHRUN_ALLOW_UNSIGNED_REPORTS: 'true',
      },
    });
    expect(run.options.member?.name).toBe('b');
    expect(run.options.notify?.channels.has('am')).toBe(true);
  });

  it('refuses a name that cannot travel in events and report URLs', () => {
    const e = configError(() => lambdaFleet({ flags: {}, env: { ...aws, KHRUN_CLUSTERS: 'a,user@b' } }, 1));
    expect(e.setting).toBe('KHRUN_CLUSTERS');
    expect(e.problem).toMatch(/"user@b"/);
  });

  it('the tick and status Lambdas need no EKS_* variables with KHRUN_CLUSTERS', () => {
    const env = { ...aws, KHRUN_CLUSTERS: 'a,b' };
    expect(lambdaTickOptions({ env }).fleet?.members.map((m) => m.name)).toEqual(['a', 'b']);
    expect(lambdaTickOptions({ env }).cluster).toBeUndefined();
    expect(lambdaStatusOptions({ env }).fleet?.settings.deadlineMs).toBe(15_000);
    expect(lambdaTriggerOptions({ env }).clusters).toEqual(['a', 'b']);
    expect(lambdaTriggerOptions({ env: aws }).clusters).toBeUndefined();
  });

  it('a runCheck event names one of them; its pods report to a URL that names it', () => {
    const env = {
      ...aws,
      KHRUN_CLUSTERS: 'a,b',
      KH_EXTERNAL_REPORTING_URL: 'https://r.lambda-url.eu-west-1.on.aws/externalCheckStatus',
      KHRUN_ALLOW_UNSIGNED_REPORTS: 'true',
    };
    const one = lambdaRunPlan({ event: { checkName: 'x', namespace: 'n', cluster: 'b' }, env });
    expect(one.options.member?.name).toBe('b');
    expect(one.options.cluster).toBeUndefined();
    expect(one.options.report.url).toBe(
      'https://r.lambda-url.eu-west-1.on.aws/clusters/b/externalCheckStatus',
    );
    const batch = lambdaRunPlan({
      event: { cluster: 'a', checks: [{ namespace: 'n', checkName: 'x' }] },
      env,
    });
    expect(batch.kind).toBe('batch');
    expect(batch.options.member?.name).toBe('a');
    expect(
      configError(() => lambdaRunPlan({ event: { checkName: 'x', namespace: 'n', cluster: 'c' }, env }))
        .message,
    ).toBe(
      '"cluster" in the event="c": is not one of the function\'s clusters (KHRUN_CLUSTERS: a, b); name one of them, or add the cluster to KHRUN_CLUSTERS (docs/multi-cluster.md)',
    );
    const { KHRUN_CLUSTERS: _, ...single } = env;
    expect(
      configError(() =>
        lambdaRunPlan({ event: { checkName: 'x', namespace: 'n', cluster: 'a' }, env: single }),
      ).problem,
    ).toMatch(/serves one cluster only/);
  });

  it('event fields: cluster is a string; memberNamed names its source', () => {
    expect(runEventFlags({ checkName: 'x', cluster: 'a' })).toEqual({ check: 'x', cluster: 'a' });
    expect(configError(() => runEventFlags({ checkName: 'x', cluster: 3 })).setting).toBe(
      '"cluster" in the event',
    );
    expect(batchEventCluster({ checks: [] })).toBeUndefined();
    expect(configError(() => batchEventCluster({ cluster: [], checks: [] })).setting).toBe(
      '"cluster" in the event',
    );
    expect(
      configError(() => memberNamed({ flags: {}, env: { KHRUN_CLUSTERS: 'a' } }, 'b', 'cluster=')).setting,
    ).toBe('cluster=');
  });
});
