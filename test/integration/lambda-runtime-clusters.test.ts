import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { LambdaRuntimeParts } from '@khrun/devkit/lambda/emulator-binaries.ts';
import { type LocalCluster, startLocalCluster } from '@khrun/devkit/local/cluster.ts';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readLastOutcome } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import { createCheck, nodeContainer, readState, repoRoot } from './helpers/khrun.ts';
import {
  buildLambdaPackage,
  type KhrunLambdas,
  lambdaRuntimeParts,
  startKhrunLambdas,
} from './helpers/lambda-runtime.ts';

// The Lambda path through the emulator against two local clusters at once (two pod-network slots): the
// functions serverless.yml deploys, once per cluster (a stack per cluster, each with its cluster's access),
// each recording its checks in its own cluster; then one set of functions over both (KHRUN_CLUSTERS with a
// kubeconfig context per cluster, docs/multi-cluster.md): one tick invokes runCheck once per cluster, each
// event naming its cluster, and each records there through the report function's per-cluster URL; last,
// one cluster's API server stopped midway fails only that cluster's invocation, as the runtime reports it,
// while the other's records on.

const kcA = adminKubeConfig();
let second: LocalCluster | undefined;
let kcB: KubeConfig;
let nsA: string;
let nsB: string;
let parts: LambdaRuntimeParts;
const started: KhrunLambdas[] = [];
const servers: Server[] = [];
let taskRoot: string;
let key: string;
/** Cluster A's functions and cluster B's, in that order (`started` is in the order they came up). */
let perCluster: [KhrunLambdas, KhrunLambdas];

function cacheDir(): string {
  return (
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun')
  );
}

beforeAll(async () => {
  [parts, taskRoot, second] = await Promise.all([
    lambdaRuntimeParts(),
    buildLambdaPackage(join(repoRoot, '.khrun/lambda-package-clusters')),
    startLocalCluster({
      cacheDir: cacheDir(),
      kubebuilderAssets: process.env.KUBEBUILDER_ASSETS || undefined,
      buildDir: join(repoRoot, 'infra/build'),
      crdDir: join(repoRoot, 'infra/crds'),
      khrunDistDir: join(repoRoot, '.khrun/test-dist'),
      imageMap: [{ image: 'node', entrypoint: [process.execPath], cmd: [] }],
    }),
  ]);
  kcB = second.kubeConfig;
  [nsA, nsB] = await Promise.all([freshNamespace(kcA, 'lambda-a'), freshNamespace(kcB, 'lambda-b')]);
  key = randomBytes(24).toString('base64url');
  const forCluster = async (kubeconfig: string, hostIp: string, ns: string, tag: string) => {
    const l = await startKhrunLambdas({
      parts,
      taskRoot,
      logDir: join(repoRoot, '.khrun/lambda-runtime-logs', tag),
      reportHost: hostIp,
      params: { namespaces: ns, reportKeyParameter: '' },
      environment: {
        KUBECONFIG: kubeconfig,
        KHRUN_REPORT_KEY: key,
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'test-secret',
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
        AWS_EC2_METADATA_DISABLED: 'true',
      },
      // 30 s for runCheck's iteration: an invocation against a stopped API server ends within the test.
      overrides: { runCheck: { timeoutSeconds: 40, environment: { KHRUN_BUDGET_MARGIN_SECONDS: '10' } } },
    });
    started.push(l);
    return l;
  };
  perCluster = await Promise.all([
    forCluster(inject('kubeconfigPath'), inject('hostIp'), nsA, 'cluster-a'),
    forCluster(second.kubeconfigPath, second.hostIp, nsB, 'cluster-b'),
  ]);
}, 1_800_000);

afterAll(async () => {
  for (const server of servers) server.close();
  await Promise.all(started.map((l) => l.stop()));
  if (nsA) await dropNamespace(kcA, nsA);
  await second?.stop();
});

const reporter = nodeContainer(
  `fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) }).then((r) => console.log('report', r.status));`,
);

describe('the Lambda functions in the emulator against two local clusters', () => {
  it('records a check in each cluster at once, each function set with its own cluster access', async () => {
    const [a, b] = perCluster;
    await Promise.all([
      createCheck(kcA, nsA, 'two-a', { containers: [reporter] }, { runInterval: '1h', timeout: '60s' }),
      createCheck(kcB, nsB, 'two-b', { containers: [reporter] }, { runInterval: '1h', timeout: '60s' }),
    ]);
    const [ra, rb] = await Promise.all([
      a!.fn('runCheck').invoke({ checkName: 'two-a', namespace: nsA }),
      b!.fn('runCheck').invoke({ checkName: 'two-b', namespace: nsB }),
    ]);
    expect(ra.payload).toMatchObject({ check: `${nsA}/two-a`, result: 'recorded', kind: 'Succeeded' });
    expect(rb.payload).toMatchObject({ check: `${nsB}/two-b`, result: 'recorded', kind: 'Succeeded' });
    expect(readLastOutcome(await readState(kcA, nsA, 'two-a'))).toMatchObject({ kind: 'Succeeded' });
    expect(readLastOutcome(await readState(kcB, nsB, 'two-b'))).toMatchObject({ kind: 'Succeeded' });
  }, 300_000);

  it('one set of functions over KHRUN_CLUSTERS: one tick dispatches to runCheck per cluster, each records there', async () => {
    // A kubeconfig with contexts a and b (the local stand-in for EKS names: the same code path but for the
    // KubeConfig's making, test/unit/fleet-config.test.ts).
    const both = new KubeConfig();
    both.loadFromOptions({
      clusters: [
        { ...kcA.getCurrentCluster()!, name: 'a' },
        { ...kcB.getCurrentCluster()!, name: 'b' },
      ],
      users: [
        { ...kcA.getCurrentUser()!, name: 'a' },
        { ...kcB.getCurrentUser()!, name: 'b' },
      ],
      contexts: [
        { name: 'a', cluster: 'a', user: 'a' },
        { name: 'b', cluster: 'b', user: 'b' },
      ],
      currentContext: 'a',
    });
    const dir = join(repoRoot, '.khrun/test-kubeconfigs');
    await mkdir(dir, { recursive: true });
    const kubeconfig = join(dir, 'lambda-runtime-fleet');
    await writeFile(kubeconfig, both.exportConfig(), { mode: 0o600 });
    const fleet = await startKhrunLambdas({
      parts,
      taskRoot,
      logDir: join(repoRoot, '.khrun/lambda-runtime-logs', 'fleet'),
      reportHost: inject('hostIp'),
      params: { namespaces: `${nsA},${nsB}`, reportKeyParameter: '' },
      environment: {
        KHRUN_CLUSTERS: 'a,b',
        KUBECONFIG: kubeconfig,
        KHRUN_REPORT_KEY: key,
        KHRUN_FIRST_RUN_JITTER: '0s',
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'test-secret',
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
        AWS_EC2_METADATA_DISABLED: 'true',
      },
    });
    started.push(fleet);
    // The report function's URL is served on cluster A's host address; the local pod networks have no route
    // between them, so cluster B's checker posts to this forwarder on B's host address (path and query as
    // given: /clusters/b/externalCheckStatus?...), as NAT would deliver it.
    const target = new URL(fleet.reportUrl);
    const forwarder = createServer((req, res) => {
      const out = request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      out.on('error', () => res.writeHead(502).end());
      req.pipe(out);
    });
    servers.push(forwarder);
    await new Promise<void>((r) => forwarder.listen(0, second!.hostIp, r));
    const via = `http://${second!.hostIp}:${(forwarder.address() as AddressInfo).port}`;
    const reporterVia = nodeContainer(
      `const url = new URL(process.env.KH_REPORTING_URL); url.host = new URL(${JSON.stringify(via)}).host; fetch(url, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) }).then((r) => console.log('report', r.status));`,
    );
    const startedMs = Date.now();
    await Promise.all([
      createCheck(kcA, nsA, 'fleet-a', { containers: [reporter] }, { runInterval: '1h', timeout: '60s' }),
      createCheck(kcB, nsB, 'fleet-b', { containers: [reporterVia] }, { runInterval: '1h', timeout: '60s' }),
    ]);
    const tick = await fleet.fn('tick').invoke({
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      time: new Date().toISOString(),
      detail: {},
    });
    expect(tick.functionError).toBeUndefined();
    const doc = tick.payload as {
      clusters: Record<string, { entries: Array<{ check: string; result: string }> }>;
    };
    expect(Object.keys(doc.clusters)).toEqual(['a', 'b']);
    expect(doc.clusters.a?.entries.map((e) => [e.check, e.result])).toContainEqual([
      `${nsA}/fleet-a`,
      'dispatched',
    ]);
    expect(doc.clusters.b?.entries.map((e) => [e.check, e.result])).toContainEqual([
      `${nsB}/fleet-b`,
      'dispatched',
    ]);
    // Each event the tick sent to runCheck (through the Invoke API, asynchronously) names its cluster.
    expect(
      fleet.invokeApi.received
        .map((r) => [r.functionName, r.invocationType, (r.event as { cluster?: string }).cluster])
        .sort(),
    ).toEqual([
      ['khrun-prod-runCheck', 'Event', 'a'],
      ['khrun-prod-runCheck', 'Event', 'b'],
    ]);
    const recorded = (kc: KubeConfig, namespace: string, name: string) =>
      waitFor<KhState, KhState>(kc, {
        path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${namespace}/${KHSTATE_PLURAL}`,
        fieldSelector: `metadata.name=${name}`,
        decide: (items) => {
          const state = items.get(`${namespace}/${name}`);
          return state && readLastOutcome(state) && Date.parse(state.spec.LastRun ?? '') >= startedMs - 2_000
            ? state
            : undefined;
        },
        timeoutMs: 180_000,
        description: `a recorded outcome of ${namespace}/${name}`,
      });
    const [a, b] = await Promise.all([recorded(kcA, nsA, 'fleet-a'), recorded(kcB, nsB, 'fleet-b')]);
    expect(readLastOutcome(a)).toMatchObject({ kind: 'Succeeded' });
    expect(readLastOutcome(b)).toMatchObject({ kind: 'Succeeded' });
    // Recorded by runCheck invocations (the runner names its invocation), not by the tick.
    expect(a.spec.AuthoritativePod).toMatch(/^lambda-khrun-prod-runCheck-/);
    expect(b.spec.AuthoritativePod).toMatch(/^lambda-khrun-prod-runCheck-/);
  }, 300_000);

  it("one cluster's API server stopped midway fails only its own invocation; the other records on", async () => {
    const [a, b] = perCluster;
    await createCheck(
      kcA,
      nsA,
      'two-a-again',
      { containers: [reporter] },
      { runInterval: '1h', timeout: '60s' },
    );
    await second!.controlPlane.stopApiServer();
    const [ra, rb] = await Promise.all([
      a!.fn('runCheck').invoke({ checkName: 'two-a-again', namespace: nsA }),
      b!.fn('runCheck').invoke({ checkName: 'two-b', namespace: nsB }),
    ]);
    expect(ra.payload).toMatchObject({ check: `${nsA}/two-a-again`, result: 'recorded', kind: 'Succeeded' });
    // Cluster B's invocation fails, as the runtime reports it, with what was wrong and where.
    expect(rb.payload).toBeUndefined();
    expect(rb.functionError).toMatchObject({
      errorType: 'ApiServerUnreachableError',
      errorMessage: expect.stringContaining(
        `cannot reach the Kubernetes API server ${kcB.getCurrentCluster()?.server}`,
      ),
    });
  }, 300_000);
});
