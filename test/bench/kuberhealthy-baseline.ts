import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { ImageMapEntry } from '@khrun/devkit/local/kubelet/image-map.ts';
import { kuberhealthyV2ImageMap } from '@khrun/devkit/local/kuberhealthy-v2.ts';
import { kuberhealthyV3Binary, kuberhealthyV3ImageMap } from '@khrun/devkit/local/kuberhealthy-v3.ts';
import { CoreV1Api, VersionApi } from '@kubernetes/client-node';
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
import { type Daemon, runDaemonPhase } from './kh-daemon-phase.ts';
import { daemonFigures, khrunFigures } from './kh-figures.ts';
import { runKhrunPhase } from './kh-khrun-phase.ts';
import { createCheckSet } from './kh-phase.ts';
import { setAsideKhchecks } from './kh-setaside.ts';

// The real Kuberhealthy v2.7.1 daemon and v3.0.0 controller, built from the Go module proxy, beside khrun
// on the same checks in the same benchmark run (issue 15 point 5). One phase per actor, one after another
// (v2 runs every khcheck of the cluster, v3 every HealthCheck): v2 on khchecks, khrun run --check on the
// same khchecks, v3 on HealthChecks converted from them, khrun run --healthcheck on those.

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
  // Quick (CI): enough to show every figure is measured, in few minutes. Full: n >= 20 of each instant
  // check (p95 from 20 up), 5 of the checker that exits 3, 3 of the long check.
  const times: CheckTimes = quick
    ? { runInterval: '10s', exitTimeout: '10s', longDelay: '10s', longTimeout: '1m' }
    : { runInterval: '15s', exitTimeout: '20s', longDelay: '60s', longTimeout: '3m' };
  const runs = quick ? { instant: 2, exit: 1, long: 1 } : { instant: 20, exit: 5, long: 3 };
  const targets = {} as Record<CheckKind, number>;
  for (const kind of CHECK_KINDS)
    targets[kind] = INSTANT_KINDS.includes(kind) ? runs.instant : kind === 'exit-3' ? runs.exit : runs.long;
  return {
    times,
    targets,
    restMs: quick ? 30_000 : 120_000,
    quietMs: quick ? 15_000 : 20_000,
    timeoutMs: quick ? 300_000 : 900_000,
  };
}

export async function measureKuberhealthy(
  bench: BenchCluster,
  opts: { quick: boolean; dist: string; log: (line: string) => void },
) {
  const { log } = opts;
  const loadAtStart = loadavg();
  const kc = bench.cluster.kubeConfig;
  useKubeconfigOutsideVitest(bench.cluster.kubeconfigPath);
  const { times, targets, restMs, quietMs, timeoutMs } = plan(opts.quick);
  const v2Build = await kuberhealthyV2Source();
  const v3Binary = await kuberhealthyV3Binary({ cacheDir: khrunCacheDir(), buildDir });
  const moduleDir = v2Build.moduleDir;
  const khrunUsers = {} as Record<CheckKind, { kubeconfig: string; user: string }>;
  for (const kind of CHECK_KINDS) {
    const u = await bench.userKubeConfig(`khrun-kh-${kind}`);
    const kubeconfig = join(bench.cluster.dir, `bench-khrun-${kind}.kubeconfig`);
    await writeFile(kubeconfig, u.kc.exportConfig(), { mode: 0o600 });
    khrunUsers[kind] = { kubeconfig, user: u.username };
  }
  const userOf = (kind: CheckKind) => khrunUsers[kind].user;
  const users = Object.fromEntries(CHECK_KINDS.map((k) => [k, userOf(k)])) as Record<CheckKind, string>;
  const serviceAccountOf = async (namespace: string, pod: string) =>
    `system:serviceaccount:${namespace}:${(await kc.makeApiClient(CoreV1Api).readNamespacedPod({ namespace, name: pod })).spec?.serviceAccountName ?? 'default'}`;

  log(`  Kuberhealthy v2.7.1 daemon: ${CHECK_KINDS.map((k) => `${targets[k]} runs of ${k}`).join(', ')}`);
  const aside = await setAsideKhchecks(kc);
  const v2Checks = await createCheckSet({ kc, prefix: 'khb-v2', record: 'khstate', moduleDir, times });
  const v2Ns = await freshNamespace(kc, 'khb-v2d');
  const v2Daemon: Daemon = {
    binary: join(v2Build.binDir, 'kuberhealthy'),
    async start() {
      const daemon = await startKuberhealthyV2(kc, { namespace: v2Ns, replicas: 1 });
      const pod = await daemon.master();
      return { user: await serviceAccountOf(v2Ns, pod?.metadata?.name ?? ''), stop: () => daemon.stop() };
    },
  };
  const v2 = await runDaemonPhase({
    daemon: v2Daemon,
    checks: v2Checks,
    targets,
    timeoutMs,
    restMs,
    quietMs,
    log,
  });
  await v2Checks.drop();
  await dropNamespace(kc, v2Ns);
  await aside.restore();

  log('  khrun run --check on the same khchecks');
  const k2Checks = await createCheckSet({ kc, prefix: 'khb-k2', record: 'khstate', moduleDir, times });
  const k2 = await runKhrunPhase({
    checks: k2Checks,
    targets,
    users: khrunUsers,
    dist: opts.dist,
    reportHost: bench.cluster.hostIp,
    log,
  });
  await k2Checks.drop();

  log('  Kuberhealthy v3.0.0 controller on HealthChecks of the same checks');
  const v3Checks = await createCheckSet({ kc, prefix: 'khb-v3', record: 'healthcheck', moduleDir, times });
  const v3Ns = await freshNamespace(kc, 'khb-v3d');
  const v3Daemon: Daemon = {
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
  };
  const v3 = await runDaemonPhase({
    daemon: v3Daemon,
    checks: v3Checks,
    targets,
    timeoutMs,
    restMs,
    quietMs,
    log,
  });
  await v3Checks.drop();
  await dropNamespace(kc, v3Ns);

  log('  khrun run --healthcheck on the same HealthChecks');
  const k3Checks = await createCheckSet({ kc, prefix: 'khb-k3', record: 'healthcheck', moduleDir, times });
  const k3 = await runKhrunPhase({
    checks: k3Checks,
    targets,
    users: khrunUsers,
    dist: opts.dist,
    reportHost: bench.cluster.hostIp,
    log,
  });
  await k3Checks.drop();

  const markerAtMs = Date.now();
  await kc.makeApiClient(VersionApi).getCode();
  const probe = await bench.userKubeConfig('khrun-kh-audit-marker');
  await probe.kc.makeApiClient(VersionApi).getCode();
  await waitForAuditFlush(bench.auditLog, probe.username, markerAtMs);
  const requests = await auditRequests(bench.auditLog, [v2.user, v3.user, ...Object.values(users)]);
  return {
    how:
      `One benchmark run, one actor after another on its own namespaces, one namespace per check: ` +
      `Kuberhealthy's own test-check (REPORT_DELAY 0s), pod-status-check and pod-restarts-check from their ` +
      `v2.7.1 YAMLs, a checker exiting 3 without a report (timeout ${times.exitTimeout}), and test-check ` +
      `with REPORT_DELAY ${times.longDelay} (the long check); runInterval ${times.runInterval} for the daemons. ` +
      `Kuberhealthy v2.7.1's daemon (its deploy/kuberhealthy.yaml Deployment, 1 replica) and v3.0.0's ` +
      `controller (its deploy/kustomize/base Deployment) built from the Go module proxy, run as pods of the ` +
      `local cluster; v3 on HealthChecks converted from the khchecks by khrun's converter. khrun: the bench ` +
      `build's bundle (${opts.dist.slice(repoRoot.length + 1)}/khrun.mjs) spawned per run, \`khrun run --check NAME\` ` +
      `or \`--healthcheck NAME\`, each kind's runs one after another, the kinds side by side, each kind as its own ` +
      `ServiceAccount. Time to outcome: the API server's receipt of the write of the run's UUID (khstate ` +
      `spec.uuid, HealthCheck status.currentUUID) to that of its result (LastRun; successCount+failureCount), ` +
      `from its audit log, each write found by a watch of the objects. Requests (audit log, by username): a ` +
      `daemon's run counts its requests in the check's namespace from 2 s before the run's start to 2 s ` +
      `before the next run's (its requests elsewhere are background, per minute); a khrun run counts every ` +
      `request of its process. At rest: only the instant checks left, on runInterval 1h, from ${quietMs / 1000} s after ` +
      `their objects last changed, ${restMs / 1000} s in 30 s slices. Memory: a daemon's VmRSS every 2 s (/proc of the pod's process) and VmHWM; khrun: each ` +
      `runner process's peak RSS (maxRSS). khrun runs no process between runs (the tick, a CronJob once a ` +
      `minute, is not part of this section).`,
    mode: opts.quick ? 'quick' : 'full',
    // The machine's 1, 5 and 15 minute load averages: the times are measured under whatever else runs.
    loadAverage: { atStart: loadAtStart, atEnd: loadavg() },
    times,
    targets,
    v2: {
      kuberhealthy: daemonFigures({
        record: 'khstate',
        phase: v2,
        namespaces: v2Checks.namespaces,
        targets,
        requests,
      }),
      khrun: khrunFigures({ record: 'khstate', phase: k2, namespaces: k2Checks.namespaces, users, requests }),
    },
    v3: {
      kuberhealthy: daemonFigures({
        record: 'healthcheck',
        phase: v3,
        namespaces: v3Checks.namespaces,
        targets,
        requests,
      }),
      khrun: khrunFigures({
        record: 'healthcheck',
        phase: k3,
        namespaces: k3Checks.namespaces,
        users,
        requests,
      }),
    },
  };
}

export type KuberhealthyFigures = Awaited<ReturnType<typeof measureKuberhealthy>>;
