import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { countRequests, waitForAuditFlush } from '../../bench/audit.ts';
import { sourceBuild } from '../../bench/source-build.ts';
import { repoRoot } from './khrun.ts';

/** One measured invocation of `khrun run`: its window, and what the receivers saw in it. */
export interface MeasuredRun {
  label: string;
  /** What the run did about notifications: none, fired, resolved, renewed, delivered-left-over. */
  transition: string;
  fromMs: number;
  toMs: number;
  /** Requests the local receivers (webhook, Slack, PagerDuty, Teams) got. */
  receiverRequests: number;
  /** Alerts Alertmanager's API took (its alertmanager_alerts_received_total, firing + resolved). */
  alertmanagerAlerts: number;
}

/** A notification as received: when khrun decided it (the webhook body's `at`) and when it arrived. */
export interface MeasuredDelivery {
  case: string;
  decidedAtMs: number;
  receivedAtMs: number;
}

/** Alerts Alertmanager received over its API so far (its own counter). */
export async function alertmanagerReceived(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^alertmanager_alerts_received_total\{[^}]*\} (\d+(?:\.\d+)?)$/gm))
    sum += Number(m[1]);
  return sum;
}

/**
 * An identity of the runs' own (a ServiceAccount with a token, bound to cluster-admin: this counts
 * requests, rbac.test.ts covers least privilege), as a kubeconfig file: the local cluster's components
 * share the admin user, so the audit log tells khrun's requests apart only by a user of their own.
 */
export async function runnerIdentity(kc: KubeConfig, namespace: string, name: string) {
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  const binding = `${namespace}-${name}`;
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: binding },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
  const tr = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 7200 } },
  });
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the admin kubeconfig has no current cluster');
  const own = new KubeConfig();
  own.loadFromOptions({
    clusters: [cluster],
    users: [{ name, token: tr.status?.token ?? '' }],
    contexts: [{ name, cluster: cluster.name, user: name, namespace }],
    currentContext: name,
  });
  const dir = await mkdtemp(join(tmpdir(), 'khrun-alerts-'));
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, own.exportConfig(), { mode: 0o600 });
  return {
    kubeconfig,
    username: `system:serviceaccount:${namespace}:${name}`,
    async remove() {
      await rbac.deleteClusterRoleBinding({ name: binding }).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Counts each run's API requests in the cluster's audit log (every request of the run's user in its
 * window: the runs are spawned one at a time and the test makes no request meanwhile), those of them
 * that notifications made (user agent khrun/notify, and the namespace defaults' ConfigMap GET), and
 * writes them with the delivery times to .khrun/notify.json; with KHRUN_RECORD_FIGURES=1 to the committed
 * bench/notify.json instead (docs/alerts.md's figures are rendered from it). A plain test run leaves the
 * tree as it was: the unit tests compare docs/alerts.md with bench/notify.json, at the same time under
 * `npm test`.
 */
export async function writeNotifyFigures(
  runs: MeasuredRun[],
  deliveries: MeasuredDelivery[],
  username: string,
) {
  const auditLog = join(inject('clusterDir'), 'audit.log');
  const first = runs[0];
  const last = runs.at(-1);
  if (!first || !last) return;
  await waitForAuditFlush(auditLog, username, last.toMs - 1000);
  const rows = [];
  for (const run of runs) {
    const c = await countRequests(auditLog, username, run.fromMs, run.toMs);
    const notify = (c.byLoop.notify ?? 0) + (c.byVerbResource['get configmaps'] ?? 0);
    rows.push({
      label: run.label,
      transition: run.transition,
      apiRequests: c.total,
      apiRequestsByNotifications: notify,
      receiverRequests: run.receiverRequests,
      alertmanagerAlerts: run.alertmanagerAlerts,
      byVerbResource: c.byVerbResource,
    });
  }
  const latencies = deliveries.map((d) => ({ case: d.case, ms: d.receivedAtMs - d.decidedAtMs }));
  const results = {
    how:
      "test/integration/alerts.test.ts on the local cluster: `khrun run` spawned once per invocation (a CronJob pod's command), " +
      "its checker pod a host process reporting through the npm kuberhealthy client; API requests counted in the API server's " +
      "audit log (every request of the runs' own ServiceAccount in the run's window; notifications' own: user agent " +
      'khrun/notify, and GETs of the namespace defaults); ' +
      "receiver requests counted by the local receivers, Alertmanager's by its alertmanager_alerts_received_total; delivery " +
      "time from the outcome write (the webhook body's `at`, the API server's clock) to the receiver's arrival (same machine).",
    date: new Date().toISOString(),
    build: await sourceBuild(repoRoot),
    loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
    cores: cpus().length,
    runs: rows,
    deliveries: latencies,
  };
  const target = process.env.KHRUN_RECORD_FIGURES === '1' ? 'bench/notify.json' : '.khrun/notify.json';
  await mkdir(join(repoRoot, dirname(target)), { recursive: true });
  await writeFile(join(repoRoot, target), `${JSON.stringify(results, null, 2)}\n`);
  return results;
}
