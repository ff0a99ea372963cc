import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, VersionApi } from '@kubernetes/client-node';
import { runPodsSelector } from '../../lib/check/run-label.ts';
import { silentLog } from '../../lib/core/log.ts';
import { runTarget } from '../../lib/session/run-target.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL } from '../../lib/state/resources.ts';
import { countRequests, type RequestCount, waitForAuditFlush } from './audit.ts';
import type { BenchCluster } from './bench-cluster.ts';
import { repoRoot } from './bench-cluster.ts';

/**
 * The most API requests (the runner's identity, by the API server's audit log) one run of a check that
 * reports at once may cost when `khrun run` hosts the report endpoint (issue 15, point 3): get the khcheck,
 * get and update the khstate (the claim), one list of the check's pods (clears earlier pods and starts the
 * pod watch), the delete of the oldest finished pod beyond the kept ones, create the pod, watch pods, one
 * khstate update (the report, recorded as the outcome in-process), one Event. The bench reports it beside
 * the measured figure and never fails on it; test/unit/run-cost.test.ts holds the engine to it.
 */
export const INSTANT_RUN_REQUEST_BUDGET = 9;

/** A check that reports success at once and exits; it prints when it posts, for the report latency. */
const CHECKER =
  "const kh = require('kuberhealthy'); console.log('POST_AT', Date.now()); kh.ReportSuccess().then(() => process.exit(0), (e) => { console.error(e.message); process.exit(1); });";

export interface IterationSample {
  totalMs: number;
  /** Container start to exit, as the process kubelet saw it. */
  checkerMs: number;
  overheadMs: number;
  claimMs: number;
  podCreateMs: number;
  /** Pod created to Running: the local kubelet's process start-up, not khrun's cost. */
  podStartMs: number;
  reportToNoticedMs: number;
  exitToNoticedMs: number;
  recordMs: number;
  requests: RequestCount;
}

export async function createBenchCheck(bench: BenchCluster, name: string, script = CHECKER): Promise<void> {
  await bench.cluster.kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: KH_GROUP,
    version: KH_VERSION,
    plural: KHCHECK_PLURAL,
    namespace: bench.namespace,
    body: {
      apiVersion: `${KH_GROUP}/${KH_VERSION}`,
      kind: 'KuberhealthyCheck',
      metadata: { name, namespace: bench.namespace },
      spec: {
        runInterval: '10m',
        timeout: '2m',
        podSpec: {
          containers: [
            {
              name: 'check',
              image: 'node:20-alpine',
              command: [process.execPath, '-e', script],
              env: [{ name: 'NODE_PATH', value: join(repoRoot, 'node_modules') }],
            },
          ],
        },
      },
    },
  });
}

/**
 * One measured iteration through the real runner code (in this process: the figure is khrun's work, not
 * Node's start-up, which the cold-start figures cover).
 */
export async function measureIteration(
  bench: BenchCluster,
  runner: { kc: import('@kubernetes/client-node').KubeConfig; username: string },
  check: string,
  containerTimes: (podUid: string) => { startedAtMs: number; finishedAtMs: number } | undefined,
): Promise<IterationSample> {
  const phases: Record<string, number> = {};
  const t0 = Date.now();
  const result = await runTarget(
    {
      kc: runner.kc,
      runner: 'bench-runner',
      report: { kind: 'hosted', host: bench.cluster.hostIp, port: 0 },
      log: silentLog,
    },
    {
      target: { kind: 'khcheck', namespace: bench.namespace, name: check },
      signal: new AbortController().signal,
      onPhase: (phase) => {
        phases[phase] ??= Date.now();
      },
    },
  );
  const tEnd = Date.now();
  if (result.kind !== 'recorded' || result.outcome.kind !== 'Succeeded') {
    throw new Error(`bench iteration did not succeed: ${JSON.stringify(result)}`);
  }
  const core = bench.cluster.kubeConfig.makeApiClient(CoreV1Api);
  const pods = await core.listNamespacedPod({
    namespace: bench.namespace,
    labelSelector: runPodsSelector(result.runUuid),
  });
  const pod = pods.items[0];
  const times = containerTimes(pod?.metadata?.uid ?? '');
  if (!pod || !times) throw new Error('the process kubelet did not report the container times');
  const logPath = bench.cluster.kubelet.podLogPath(bench.namespace, pod.metadata?.name ?? '', 'check');
  const output = logPath ? await readFile(logPath, 'utf8') : '';
  const postAtMs = Number(/POST_AT (\d+)/.exec(output)?.[1]);
  // A marker request after the window: once it is in the (batched) audit log, so is every earlier one.
  const markerAtMs = Date.now();
  await runner.kc.makeApiClient(VersionApi).getCode();
  await waitForAuditFlush(bench.auditLog, runner.username, markerAtMs);
  const requests = await countRequests(bench.auditLog, runner.username, t0 - 5, tEnd + 5);
  const at = (p: string) => phases[p] ?? Number.NaN;
  const checkerMs = times.finishedAtMs - times.startedAtMs;
  return {
    totalMs: tEnd - t0,
    checkerMs,
    overheadMs: tEnd - t0 - checkerMs,
    claimMs: at('claimed') - t0,
    podCreateMs: at('pod created') - at('claimed'),
    podStartMs: at('pod Running') - at('pod created'),
    reportToNoticedMs: at('report received') - postAtMs,
    exitToNoticedMs: at('pod Succeeded') - times.finishedAtMs,
    recordMs: tEnd - Math.max(at('report received'), at('pod Succeeded')),
    requests,
  };
}
