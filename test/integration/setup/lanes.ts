/**
 * The integration suite's lanes: which files may share a local cluster with others at the same time, and
 * which need one to themselves. vitest.config.ts makes a project of each lane, each with a cluster of its
 * own (the global setup), and `npm run test:integration` (run-lanes.ts) runs the three lanes at once.
 *
 * The rule for a new file (test/unit/integration-lanes.test.ts checks the markers):
 * - EXCLUSIVE 'deploy' when it installs khrun cluster-wide: `applyDeploy` (infra/deploy: the namespace
 *   khrun, the ClusterRoles and bindings khrun-*, the ValidatingAdmissionPolicies and bindings, the
 *   khrun-tick and khrun-sync CronJobs) or `helm install` of the chart (the same cluster-scoped names).
 *   Every such file applies its own variant of the same objects, and helm.test.ts takes them over and
 *   deletes them.
 * - EXCLUSIVE 'kuberhealthy' when it runs the real Kuberhealthy: v2.7.1's daemon runs every khcheck of the
 *   cluster (it has no namespace setting) and v3.0.0's controller every HealthCheck (KH_TARGET_NAMESPACE is
 *   parsed but unused in v3.0.0), so no other file's checks may exist meanwhile; `khrun takeover`'s search
 *   and its measured hand-over gaps see the whole cluster.
 * - Otherwise PARALLEL, and it must keep to that: its own namespaces (freshNamespace), no object outside
 *   them (a cluster-scoped one only under a unique name), its own processes on 127.0.0.1 and free ports,
 *   its own bare control plane or cluster for anything that stops or restarts one, waits on its own objects
 *   (never on a cluster-wide count or list), no fixed name under .khrun/ that another file also writes. It
 *   may assume that no EXCLUSIVE file runs on its cluster: nothing of infra/deploy's and no Kuberhealthy
 *   is installed there.
 * An EXCLUSIVE file goes to either serial lane (each runs its files one at a time on its own cluster):
 * the one whose files took less time in the last measured run (docs/local-cluster.md). A file that cannot
 * keep to the PARALLEL rule and is neither kind: fix its habit (a unique name, a bare control plane of its
 * own), or make it EXCLUSIVE with its reason written here.
 */

export type ExclusiveReason = 'deploy' | 'kuberhealthy';

/** Files that need a cluster to themselves, and why (the rule above). */
export const EXCLUSIVE: Readonly<Record<string, ExclusiveReason>> = {
  'test/integration/admission-credentials.test.ts': 'deploy',
  'test/integration/admission-param-informer.test.ts': 'deploy',
  'test/integration/admission-policy.test.ts': 'deploy',
  'test/integration/admission-redteam.test.ts': 'deploy',
  'test/integration/admission-routes.test.ts': 'deploy',
  'test/integration/deploy.test.ts': 'deploy',
  'test/integration/fleet.test.ts': 'deploy',
  'test/integration/helm.test.ts': 'deploy',
  'test/integration/lambda-runtime.test.ts': 'deploy',
  'test/integration/khjob.test.ts': 'deploy',
  'test/integration/logs.test.ts': 'deploy',
  'test/integration/rbac.test.ts': 'deploy',
  'test/integration/rerun.test.ts': 'deploy',
  'test/integration/sync.test.ts': 'deploy',
  'test/integration/tick-healthchecks.test.ts': 'deploy',
  'test/integration/tick.test.ts': 'deploy',
  // It also applies infra/deploy and the chart, beside both Kuberhealthy versions.
  'test/integration/beside-kuberhealthy.test.ts': 'kuberhealthy',
  'test/integration/compat/v2-checks.test.ts': 'kuberhealthy',
  'test/integration/compat/v3-side-by-side.test.ts': 'kuberhealthy',
  'test/integration/takeover-v3.test.ts': 'kuberhealthy',
  'test/integration/takeover.test.ts': 'kuberhealthy',
};

/**
 * The EXCLUSIVE files over two serial lanes, balanced by their measured durations (longest first, each to
 * the lane with less so far), from the clean-clone `.ci/run` of 3e7df1c on 2026-12-03 (one file at a time,
 * load average 1-2): about 410 s of tests each.
 */
export const SERIAL_LANES: Readonly<
  Record<'integration-serial-1' | 'integration-serial-2', readonly string[]>
> = {
  'integration-serial-1': [
    'test/integration/deploy.test.ts', // 153 s
    'test/integration/fleet.test.ts', // 73 s
    'test/integration/admission-param-informer.test.ts', // 61 s
    'test/integration/helm.test.ts', // 30 s
    'test/integration/rerun.test.ts', // 29 s
    'test/integration/beside-kuberhealthy.test.ts', // 23 s
    'test/integration/tick-healthchecks.test.ts', // 15 s
    'test/integration/sync.test.ts', // 12 s
    'test/integration/admission-credentials.test.ts', // 8 s
    'test/integration/admission-routes.test.ts', // 6 s
  ],
  'integration-serial-2': [
    'test/integration/takeover.test.ts', // 105 s
    'test/integration/compat/v2-checks.test.ts', // 75 s
    'test/integration/takeover-v3.test.ts', // 65 s
    'test/integration/lambda-runtime.test.ts', // 41 s
    'test/integration/tick.test.ts', // 35 s
    'test/integration/compat/v3-side-by-side.test.ts', // 27 s
    'test/integration/khjob.test.ts', // 18 s
    'test/integration/rbac.test.ts', // 18 s
    'test/integration/logs.test.ts', // 12 s
    'test/integration/admission-policy.test.ts', // 7 s
    'test/integration/admission-redteam.test.ts', // 6 s
  ],
};

/** The vitest project that runs an integration file: its serial lane's, else the parallel lane's. */
export function projectOf(file: string): string {
  for (const [lane, files] of Object.entries(SERIAL_LANES)) if (files.includes(file)) return lane;
  return 'integration';
}

/** Every integration file; those not EXCLUSIVE are PARALLEL. */
export const INTEGRATION_FILES = 'test/integration/**/*.test.ts';

/**
 * How many PARALLEL files run at once. The suite waits far more than it computes (load average 0.5-2 on
 * 2 cores with one file at a time), but every file's pods share one process kubelet, and a file's own
 * processes (runners, servers, a second control plane) need the cores too: chosen by measurement
 * (docs/local-cluster.md, `npm test`).
 */
export const PARALLEL_WORKERS = 3;

/** The vitest projects of the lanes, in the order run-lanes.ts starts them. */
export const LANE_PROJECTS = ['integration-serial-1', 'integration-serial-2', 'integration'] as const;

/**
 * The PARALLEL files' measured durations (seconds; the parallel lane of `npm test` at c9f1541 on
 * 2026-12-04, the three lanes at once, load average 9-13). The parallel lane starts its files longest
 * first (sequencer.ts), the same with or without vitest's cache (without it vitest starts larger files first;
 * in the run measured, with it, faults/control-plane.test.ts started at 533 s of the lane's 707 s: the
 * lane's last 30 s ran it alone, and 630-670 s it and one other). A file not listed starts first (it may
 * be long); add it with its duration from a run's JSON report (KHRUN_TEST_REPORT_DIR, run-lanes.ts).
 */
export const PARALLEL_DURATIONS_S: Readonly<Record<string, number>> = {
  'test/integration/faults/exit-grace.test.ts': 311,
  'test/integration/alerts.test.ts': 182,
  'test/integration/faults/control-plane.test.ts': 174,
  'test/integration/faults/crashes.test.ts': 142,
  'test/integration/run-check.test.ts': 113,
  'test/integration/kubelet.test.ts': 74,
  'test/integration/release.test.ts': 71,
  'test/integration/faults/boundaries.test.ts': 69,
  'test/integration/faults/conflicts.test.ts': 46,
  'test/integration/healthcheck.test.ts': 45,
  'test/integration/lambda-runtime-clusters.test.ts': 45,
  'test/integration/faults/clock-skew.test.ts': 45,
  'test/integration/helm-installer.test.ts': 36,
  'test/integration/faults/hostile-reports.test.ts': 36,
  'test/integration/cli-output.test.ts': 34,
  'test/integration/monitoring.test.ts': 34,
  'test/integration/faults/fencing.test.ts': 32,
  'test/integration/faults/report-secret.test.ts': 31,
  'test/integration/batch.test.ts': 28,
  'test/integration/lambda.test.ts': 28,
  'test/integration/status.test.ts': 23,
  'test/integration/local-up.test.ts': 22,
  'test/integration/faults/overlap.test.ts': 21,
  'test/integration/faults/connection-flood.test.ts': 13,
  'test/integration/status-watch.test.ts': 9,
  'test/integration/convert.test.ts': 8,
  'test/integration/serve.test.ts': 8,
  'test/integration/pod-removal.test.ts': 6,
  'test/integration/faults/load.test.ts': 6,
  'test/integration/crds.test.ts': 0,
};

/**
 * The parallel lane's files in the order to start them: those with no measured duration first, then
 * longest first (ties by name). Pure.
 */
export function parallelStartOrder<T>(files: readonly T[], pathOf: (file: T) => string): T[] {
  const seconds = (f: T) => PARALLEL_DURATIONS_S[pathOf(f)] ?? Number.POSITIVE_INFINITY;
  return [...files].sort((a, b) => seconds(b) - seconds(a) || pathOf(a).localeCompare(pathOf(b)));
}
