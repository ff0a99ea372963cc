import { randomUUID } from 'node:crypto';
import { CoreV1Api, type KubeConfig, VersionApi } from '@kubernetes/client-node';
import { buildCheckerPod, RUN_ID_LABEL } from '../../lib/check/pod-builder.ts';
import { validateCheck } from '../../lib/check/validate-check.ts';
import { silentLog } from '../../lib/core/log.ts';
import { kubePort } from '../../lib/kube/kube-port.ts';
import { startReportServer } from '../../lib/report/http-server.ts';
import { kubeCallerLookup } from '../../lib/report/kube-lookup.ts';
import { newKhState, readAcceptedReport } from '../../lib/state/khstate.ts';
import { claimRun, recordOutcome } from '../../lib/state/record.ts';
import { countRequests, type RequestCount, waitForAuditFlush } from './audit.ts';
import type { BenchCluster } from './bench-cluster.ts';

const POLL_MS = 5_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The same iteration driven the way Kuberhealthy v2's external checker drives it (pkg/checks/external):
 * write the UUID and verify it after 1 s, wait 5 s for old pods to clear, create the pod, then poll every
 * 5 s for it to start, for the report (a re-read of the khstate), and for its exit. The fixed sleeps are
 * the point: this is the baseline khrun's watch-driven iteration is compared with.
 */
export async function pollingIteration(
  bench: BenchCluster,
  runner: { kc: KubeConfig; username: string },
  checkName: string,
): Promise<{ totalMs: number; requests: RequestCount }> {
  const kube = kubePort(runner.kc);
  const core = runner.kc.makeApiClient(CoreV1Api);
  const ns = bench.namespace;
  const server = await startReportServer(
    {
      lookup: kubeCallerLookup(runner.kc, { namespaces: [ns] }),
      state: { read: kube.readState, replace: kube.replaceState },
      clock: { nowMs: Date.now },
      log: silentLog,
      server: 'bench-poller',
    },
    // v2's way: unsigned reports, identified by the kh-run-uuid header (or the source address).
    {
      host: bench.cluster.hostIp,
      port: 0,
      access: { key: undefined, unsigned: 'header-and-ip', scope: { namespaces: [ns] } },
    },
  );
  const t0 = Date.now();
  try {
    const source = await kube.readCheck(ns, checkName);
    const check = source && validateCheck(source);
    if (!check?.ok) throw new Error(`bench check ${checkName} is missing or invalid`);
    const uuid = randomUUID();
    const run = {
      uuid,
      startedAtMs: t0,
      deadlineMs: t0 + check.check.timeoutMs,
      pod: `${checkName}-${Math.floor(t0 / 1000)}`,
      runner: 'poller',
      leaseUntilMs: t0 + check.check.timeoutMs,
    };
    const state = (await kube.readState(ns, checkName)) ?? newKhState(checkName, ns);
    const claimed = state.metadata.resourceVersion
      ? await kube.replaceState(claimRun(state, run))
      : await kube.createState(claimRun(state, run));
    await sleep(1_000); // v2: verify the UUID was written, 1 s apart
    await kube.readState(ns, checkName);
    await sleep(POLL_MS); // v2: waitForAllPodsToClear polls the new pod name every 5 s
    await core.readNamespacedPod({ name: run.pod, namespace: ns }).catch(() => undefined);
    const pod = buildCheckerPod({
      check: check.check,
      runUuid: uuid,
      reportingUrl: server.url,
      deadlineEpochMs: run.deadlineMs,
      nowEpochMs: t0,
    });
    await kube.createPod(pod);
    const podPhase = async () =>
      (await core.listNamespacedPod({ namespace: ns, labelSelector: `${RUN_ID_LABEL}=${uuid}` })).items[0]
        ?.status?.phase;
    while (!['Running', 'Succeeded', 'Failed'].includes((await podPhase()) ?? '')) await sleep(POLL_MS);
    while (readAcceptedReport(await kube.readState(ns, checkName))?.uuid !== uuid) await sleep(POLL_MS);
    while (['Running', 'Pending'].includes((await podPhase()) ?? '')) await sleep(POLL_MS);
    const latest = (await kube.readState(ns, checkName)) ?? claimed;
    const report = readAcceptedReport(latest);
    await kube.replaceState(
      recordOutcome(
        latest,
        run,
        {
          kind: 'Succeeded',
          ok: report?.ok ?? false,
          errors: report?.errors ?? [],
          node: '',
          durationMs: Date.now() - t0,
        },
        { nowMs: Date.now(), runner: 'poller' },
      ),
    );
  } finally {
    await server.close();
  }
  const tEnd = Date.now();
  const markerAtMs = Date.now();
  await runner.kc.makeApiClient(VersionApi).getCode();
  await waitForAuditFlush(bench.auditLog, runner.username, markerAtMs);
  return {
    totalMs: tEnd - t0,
    requests: await countRequests(bench.auditLog, runner.username, t0 - 5, tEnd + 5),
  };
}
