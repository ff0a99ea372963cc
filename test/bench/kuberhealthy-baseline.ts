import { join } from 'node:path';
import type { ImageMapEntry } from '@khrun/devkit/local/kubelet/image-map.ts';
import { kuberhealthyV2ImageMap } from '@khrun/devkit/local/kuberhealthy-v2.ts';
import { kuberhealthyV3Binary, kuberhealthyV3ImageMap } from '@khrun/devkit/local/kuberhealthy-v3.ts';
import { CoreV1Api, type V1PodTemplate, VersionApi } from '@kubernetes/client-node';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { parseGoDuration } from '../../lib/core/duration.ts';
import { dropNamespace, freshNamespace } from '../integration/helpers/cluster.ts';
import { useKubeconfigOutsideVitest } from '../integration/helpers/deploy.ts';
import { kuberhealthyV2Source, startKuberhealthyV2 } from '../integration/helpers/kuberhealthy-v2.ts';
import {
  dropV3Finalizers,
  khrunCacheDir,
  startKuberhealthyV3,
} from '../integration/helpers/kuberhealthy-v3.ts';
import { waitForAuditFlush } from './audit.ts';
import { type BenchCluster, repoRoot } from './bench-cluster.ts';
import { auditRequests } from './kh-audit.ts';
import { CHECK_KINDS, type CheckKind, type CheckTimes, INSTANT_KINDS } from './kh-checks.ts';
import { actorFigure } from './kh-figures.ts';
import { removeBenchJobs } from './kh-fire.ts';
import { type PairRun, type Peer, runPair } from './kh-pair.ts';
import { type CheckSet, createCheckSet } from './kh-phase.ts';
import { setAsideKhchecks } from './kh-setaside.ts';
import { deployForScale } from './scale-setup.ts';
import { summarize } from './stats.ts';

// The real Kuberhealthy v2.7.1 daemon and v3.0.0 controller, built from the Go module proxy, each at the
// same time as khrun on the same check programs (issue 27 item 1). A Kuberhealthy runs every object of its
// kind in the cluster (v2 every khcheck, v3 every HealthCheck; neither limits itself to a namespace), so
// khrun runs the other kind beside it: v2 on khchecks beside khrun on HealthChecks, then v3 on HealthChecks
// beside khrun on khchecks. Each pair: its own namespaces per actor and check, one identity per actor.

const buildDir = join(repoRoot, 'infra/build');

/** The images the section runs: Kuberhealthy v2.7.1's daemon and check programs and v3.0.0's controller. */
export async function kuberhealthyImages(log: (line: string) => void): Promise<ImageMapEntry[]> {
  const cacheDir = khrunCacheDir();
  const v2 = await kuberhealthyV2ImageMap({ cacheDir, buildDir, onProgress: log });
  return [
    ...v2,
    ...kuberhealthyV3ImageMap(await kuberhealthyV3Binary({ cacheDir, buildDir, onProgress: log })),
  ];
}

function plan(quick: boolean) {
  // Quick (CI): enough to show every figure is measured, in a few minutes. Full: 15 measured runs of each
  // instant check and 5 of the checker that exits 3, each after the start-up run.
  const times: CheckTimes = quick
    ? { runInterval: '10s', exitTimeout: '10s' }
    : { runInterval: '15s', exitTimeout: '20s' };
  const targets = {} as Record<CheckKind, number>;
  for (const kind of CHECK_KINDS)
    targets[kind] = INSTANT_KINDS.includes(kind) ? (quick ? 2 : 15) : quick ? 1 : 5;
  return { times, targets, deadlineMs: quick ? 300_000 : 900_000 };
}

const intervalMsOf = (times: CheckTimes) => {
  const d = parseGoDuration(times.runInterval);
  if (!d.ok) throw new Error(d.error);
  return d.ns / 1e6;
};

export async function measureKuberhealthy(
  bench: BenchCluster,
  opts: { quick: boolean; dist: string; log: (line: string) => void },
) {
  const { log } = opts;
  const kc = bench.cluster.kubeConfig;
  useKubeconfigOutsideVitest(bench.cluster.kubeconfigPath);
  const { times, targets, deadlineMs } = plan(opts.quick);
  const intervalMs = intervalMsOf(times);
  const v2Build = await kuberhealthyV2Source();
  const v3Binary = await kuberhealthyV3Binary({ cacheDir: khrunCacheDir(), buildDir });
  const moduleDir = v2Build.moduleDir;
  await deployForScale(bench.cluster.kubeconfigPath, khrunCacheDir(), opts.dist);
  const template = (
    await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedPodTemplate({ name: 'khrun-runner', namespace: DEPLOY_NAMESPACE })
  ).template as V1PodTemplate['template'];
  if (!template)
    throw new Error(`no PodTemplate khrun-runner in ${DEPLOY_NAMESPACE} after applying infra/deploy`);
  const khrunUser = `system:serviceaccount:${DEPLOY_NAMESPACE}:khrun-runner`;
  const serviceAccountOf = async (namespace: string, pod: string) =>
    `system:serviceaccount:${namespace}:${(await kc.makeApiClient(CoreV1Api).readNamespacedPod({ namespace, name: pod })).spec?.serviceAccountName ?? 'default'}`;
  const sets = (peer: string, peerRecord: 'khstate' | 'healthcheck') =>
    Promise.all([
      createCheckSet({ kc, prefix: `khb-${peer}`, record: peerRecord, moduleDir, times }),
      createCheckSet({
        kc,
        prefix: `khb-k${peer}`,
        record: peerRecord === 'khstate' ? 'healthcheck' : 'khstate',
        moduleDir,
        times,
      }),
    ]);
  const pair = (peer: Peer, peerChecks: CheckSet, khrunChecks: CheckSet) =>
    runPair({
      bench,
      peer,
      peerChecks,
      khrunChecks,
      template,
      jobNamespace: DEPLOY_NAMESPACE,
      intervalMs,
      targets,
      deadlineMs,
      log,
    });

  log('  Kuberhealthy v2.7.1 on khchecks beside khrun on HealthChecks, at the same time');
  const aside = await setAsideKhchecks(kc);
  const [v2Checks, kv2Checks] = await sets('v2', 'khstate');
  const v2Ns = await freshNamespace(kc, 'khb-v2d');
  let v2Run: PairRun;
  try {
    v2Run = await pair(
      {
        binary: join(v2Build.binDir, 'kuberhealthy'),
        async start() {
          const daemon = await startKuberhealthyV2(kc, { namespace: v2Ns, replicas: 1 });
          const pod = await daemon.master();
          return { user: await serviceAccountOf(v2Ns, pod?.metadata?.name ?? ''), stop: () => daemon.stop() };
        },
      },
      v2Checks,
      kv2Checks,
    );
  } finally {
    await removeBenchJobs(kc, DEPLOY_NAMESPACE);
    await v2Checks.drop();
    await kv2Checks.drop();
    await dropNamespace(kc, v2Ns);
    await aside.restore();
  }

  log('  Kuberhealthy v3.0.0 on HealthChecks beside khrun on khchecks, at the same time');
  const [v3Checks, kv3Checks] = await sets('v3', 'healthcheck');
  const v3Ns = await freshNamespace(kc, 'khb-v3d');
  let v3Run: PairRun;
  try {
    v3Run = await pair(
      {
        binary: v3Binary,
        async start() {
          const v3 = await startKuberhealthyV3(kc, v3Ns);
          return {
            user: await serviceAccountOf(v3Ns, v3.podName),
            async stop() {
              await v3.stop();
              // A stopped v3 never removes its finalizer, which would hold its namespaces' deletion.
              for (const ns of Object.values(v3Checks.namespaces)) await dropV3Finalizers(kc, ns);
            },
          };
        },
      },
      v3Checks,
      kv3Checks,
    );
  } finally {
    await removeBenchJobs(kc, DEPLOY_NAMESPACE);
    await v3Checks.drop();
    await kv3Checks.drop();
    await dropNamespace(kc, v3Ns);
  }

  // A marker request after both pairs: once it is in the (batched) audit log, so is every earlier one.
  const probe = await bench.userKubeConfig('khrun-kh-audit-marker');
  const markerAtMs = Date.now();
  await probe.kc.makeApiClient(VersionApi).getCode();
  await waitForAuditFlush(bench.auditLog, probe.username, markerAtMs);
  const requests = await auditRequests(bench.auditLog, [v2Run.peer.user, v3Run.peer.user, khrunUser]);
  const figures = (run: PairRun, peer: 'v2' | 'v3', peerChecks: CheckSet, khrunChecks: CheckSet) => {
    const common = { intervalMs, requests, windowFromMs: run.windowFromMs, windowToMs: run.windowToMs };
    return {
      complete: run.complete,
      loadAverage: run.loadAverage,
      windowSeconds: Math.round((run.windowToMs - run.windowFromMs) / 1000),
      peer: {
        ...actorFigure({
          ...common,
          record: peerChecks.record,
          user: run.peer.user,
          schedule: { kind: peer },
          runs: run.peer.runs,
          namespaces: peerChecks.namespaces,
        }),
        rssMiB: summarize(run.peer.memory.samplesMiB),
        peakRssMiB: run.peer.memory.peakMiB,
      },
      khrun: {
        ...actorFigure({
          ...common,
          record: khrunChecks.record,
          user: khrunUser,
          schedule: { kind: 'khrun', fires: run.khrun.fires },
          runs: run.khrun.runs,
          namespaces: khrunChecks.namespaces,
        }),
        skippedFires: run.khrun.skipped,
        runnerPeakRssMiB: summarize(run.khrun.runnerPeakRssMiB),
      },
    };
  };
  return {
    how:
      `Each Kuberhealthy at the same time as khrun on the same cluster, in turn (v2 beside khrun, then v3 beside khrun). ` +
      `A Kuberhealthy runs every object of its kind in the cluster, so khrun runs the other kind beside it: ` +
      `Kuberhealthy v2.7.1's daemon (its deploy/kuberhealthy.yaml Deployment, 1 replica) on khchecks beside khrun on ` +
      `HealthChecks converted from them by khrun's converter, then v3.0.0's controller (its deploy/kustomize/base ` +
      `Deployment) on those HealthChecks beside khrun on the khchecks; both Kuberhealthy builds from the Go module ` +
      `proxy, run as pods of the local cluster. The checks, a namespace each per actor: Kuberhealthy's own ` +
      `test-check (REPORT_DELAY 0s) and pod-status-check from their v2.7.1 YAMLs, and a checker that exits 3 ` +
      `without a report (timeout ${times.exitTimeout}); runInterval ${times.runInterval}. khrun: infra/deploy ` +
      `applied (admission policies on), a runner Job per run from its khrun-runner PodTemplate (as a CronJob of ` +
      `\`khrun sync\` makes it) created by the benchmark on the same interval, each check at its own offset in it, ` +
      `a fire skipped while the check's last Job is active (concurrencyPolicy Forbid); the runner pods and ` +
      `checker pods run by the process kubelet. One watcher (a list-watch of khstates and one of HealthChecks, ` +
      `in the benchmark process) reads every actor's runs the same way: a run starts at the first version of ` +
      `the object carrying its UUID (khstate spec.uuid, HealthCheck status.currentUUID) and ends at the first ` +
      `carrying its result (LastRun; successCount+failureCount). Due: khrun's Job creation; v3's own rule ` +
      `(the last run's status.lastRunUnix + runInterval); v2's ticker (made before its first run, which starts ` +
      `at once; a run is released by the first tick after the last release; a release is the run's first ` +
      `request, reading the khstate, from the audit log); in each case not before the last run's outcome. ` +
      `The first run of every check is start-up and left out. Requests: every request of each identity ` +
      `(the Kuberhealthy's ServiceAccount; khrun-runner) from the moment every check of both had its first ` +
      `outcome to the end, per outcome in that window (the Job controller's requests for khrun's runner pods ` +
      `are not counted: it runs as the controller manager's own user). Memory: a Kuberhealthy's VmRSS every ` +
      `2 s and its VmHWM; khrun: each runner process's peak RSS (maxRSS at exit).`,
    mode: opts.quick ? 'quick' : 'full',
    times,
    targets,
    pairs: {
      v2: figures(v2Run, 'v2', v2Checks, kv2Checks),
      v3: figures(v3Run, 'v3', v3Checks, kv3Checks),
    },
  };
}

export type KuberhealthyFigures = Awaited<ReturnType<typeof measureKuberhealthy>>;
