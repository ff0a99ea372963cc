import { randomBytes } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { LambdaRuntimeParts } from '@khrun/devkit/lambda/emulator-binaries.ts';
import { type LocalCluster, startLocalCluster } from '@khrun/devkit/local/cluster.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readLastOutcome } from '../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { createCheck, nodeContainer, readState, repoRoot } from './helpers/khrun.ts';
import {
  buildLambdaPackage,
  type KhrunLambdas,
  lambdaRuntimeParts,
  startKhrunLambdas,
} from './helpers/lambda-runtime.ts';

// The Lambda path through the emulator against two local clusters at once (two pod-network slots): the
// functions serverless.yml deploys, once per cluster (a stack per cluster, each with its cluster's access),
// each recording its checks in its own cluster; one cluster's API server stopped midway fails only that
// cluster's invocation, as the runtime reports it, while the other's records on.

const kcA = adminKubeConfig();
let second: LocalCluster | undefined;
let kcB: KubeConfig;
let nsA: string;
let nsB: string;
let parts: LambdaRuntimeParts;
const started: KhrunLambdas[] = [];

function cacheDir(): string {
  return (
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun')
  );
}

beforeAll(async () => {
  let taskRoot: string;
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
  const key = randomBytes(24).toString('base64url');
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
  await Promise.all([
    forCluster(inject('kubeconfigPath'), inject('hostIp'), nsA, 'cluster-a'),
    forCluster(second.kubeconfigPath, second.hostIp, nsB, 'cluster-b'),
  ]);
}, 1_800_000);

afterAll(async () => {
  await Promise.all(started.map((l) => l.stop()));
  if (nsA) await dropNamespace(kcA, nsA);
  await second?.stop();
});

const reporter = nodeContainer(
  `fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) }).then((r) => console.log('report', r.status));`,
);

describe('the Lambda functions in the emulator against two local clusters', () => {
  it('records a check in each cluster at once, each function set with its own cluster access', async () => {
    const [a, b] = started;
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

  it("one cluster's API server stopped midway fails only its own invocation; the other records on", async () => {
    const [a, b] = started;
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
