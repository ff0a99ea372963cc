/**
 * The integration suite's lanes: which files may share a local cluster with others at the same time, and
 * which need one of their own one file at a time. vitest.config.ts makes a project of each lane (each with
 * its own cluster, from the global setup) and `npm run test:integration` (run-lanes.ts) runs the three
 * projects at once.
 *
 * The rule for a new file (a unit test, integration-lanes.test.ts, checks the markers):
 * - It goes to DEPLOY when it installs khrun cluster-wide: `applyDeploy` (infra/deploy: the namespace
 *   khrun, the ClusterRoles and bindings khrun-*, the ValidatingAdmissionPolicies and bindings, the
 *   khrun-tick and khrun-sync CronJobs) or `helm install` of the chart (the same cluster-scoped names).
 *   Every such file applies its own variant of the same objects, and helm.test.ts takes them over and
 *   deletes them: one file at a time.
 * - It goes to KUBERHEALTHY when it runs the real Kuberhealthy: v2.7.1's daemon runs every khcheck of the
 *   cluster (it has no namespace setting) and v3.0.0's controller every HealthCheck (KH_TARGET_NAMESPACE
 *   is parsed but unused in v3.0.0), so no other file's checks may exist meanwhile; `khrun takeover`'s
 *   search and its measured hand-over gaps see the whole cluster. One file at a time.
 * - Otherwise it is PARALLEL, and must keep to that: its own namespaces (freshNamespace), no object outside
 *   them (a cluster-scoped one only under a unique name), its own processes on 127.0.0.1 and free ports,
 *   its own bare control plane or cluster for anything that stops or restarts one, waits on its own objects
 *   (never on a cluster-wide count or list), no fixed name under .khrun/ that another file also writes. It
 *   may assume that no file of the other lanes runs on its cluster: nothing of infra/deploy's and no
 *   Kuberhealthy is installed there.
 * A file that cannot follow the PARALLEL rule and is neither of the others: fix its habit (a unique name, a
 * bare control plane of its own), or add a lane here and to vitest.config.ts.
 */

/** Files that install infra/deploy or the chart: one at a time, on a cluster of their own. */
export const DEPLOY_LANE: readonly string[] = [
  'test/integration/admission-policy.test.ts',
  'test/integration/admission-routes.test.ts',
  'test/integration/deploy.test.ts',
  'test/integration/helm.test.ts',
  'test/integration/khjob.test.ts',
  'test/integration/logs.test.ts',
  'test/integration/rbac.test.ts',
  'test/integration/rerun.test.ts',
  'test/integration/sync.test.ts',
  'test/integration/tick-healthchecks.test.ts',
  'test/integration/tick.test.ts',
];

/** Files that run the real Kuberhealthy v2 daemon or v3 controller: one at a time, on a cluster of their own. */
export const KUBERHEALTHY_LANE: readonly string[] = [
  'test/integration/beside-kuberhealthy.test.ts',
  'test/integration/compat/v2-checks.test.ts',
  'test/integration/compat/v3-side-by-side.test.ts',
  'test/integration/takeover-v3.test.ts',
  'test/integration/takeover.test.ts',
];

/** Every integration file; those of no other lane are PARALLEL. */
export const INTEGRATION_FILES = 'test/integration/**/*.test.ts';

/**
 * How many PARALLEL files run at once. The suite waits far more than it computes (load average 0.5-2 on
 * 2 cores with one file at a time), but every file's pods share one process kubelet, and a file's own
 * processes (runners, servers, a second control plane) need the cores too: chosen by measurement
 * (docs/local-cluster.md, `npm test`).
 */
export const PARALLEL_WORKERS = 3;

/** The vitest projects of the lanes, in the order run-lanes.ts prints them. */
export const LANE_PROJECTS = ['integration-deploy', 'integration-kuberhealthy', 'integration'] as const;
