import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type V1CronJob,
  type V1Job,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLastOutcome } from '../../lib/state/khstate.ts';
import {
  KH_GROUP,
  KH_VERSION,
  KHCHECK_PLURAL,
  KHSTATE_PLURAL,
  type KhState,
} from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import {
  applyDeploy,
  buildTestBundles,
  DEPLOY_NAMESPACE,
  kubectl,
  serviceAccountKubeConfig,
  writeKubeConfig,
} from './helpers/deploy.ts';
import { createCheck, nodeContainer } from './helpers/khrun.ts';

// `khrun sync` as the sync ServiceAccount: one CronJob per khcheck, rendered (--dry-run -o yaml) and
// applied; removed with its khcheck; and a manual rerun with `kubectl create job --from=cronjob/...`.

const run = promisify(execFile);
const kc = adminKubeConfig();
const batch = kc.makeApiClient(BatchV1Api);
let ns: string;
let dist: string;
let syncKubeconfig: string;

beforeAll(async () => {
  dist = await buildTestBundles();
  await applyDeploy({ name: 'sync', distDir: dist, components: ['sync'], suspend: ['khrun-sync'] });
  ns = await freshNamespace(kc, 'sync');
  // CronJobs run in their khcheck's namespace as khrun-runner: that ServiceAccount and a binding to the
  // runner ClusterRole are what a namespace outside kuberhealthy needs (docs/install.md, "One CronJob per check").
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'khrun-runner' } } });
  await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: 'khrun-runner' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'khrun-runner' },
      subjects: [{ kind: 'ServiceAccount', name: 'khrun-runner', namespace: ns }],
    },
  });
  syncKubeconfig = await writeKubeConfig(
    await serviceAccountKubeConfig(kc, DEPLOY_NAMESPACE, 'khrun-sync'),
    'sync',
  );
  const ok = [
    nodeContainer(
      "fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) });",
    ),
  ];
  await createCheck(kc, ns, 'every-five', { containers: ok }, { runInterval: '5m', timeout: '90s' });
  await createCheck(kc, ns, 'every-seven', { containers: ok }, { runInterval: '7m' });
}, 180_000);
afterAll(async () => {
  await dropNamespace(kc, ns);
});

async function sync(...args: string[]) {
  const { stdout } = await run(
    process.execPath,
    [join(dist, 'khrun.mjs'), 'sync', '-n', ns, '--runner-namespace', DEPLOY_NAMESPACE, ...args],
    {
      env: { ...process.env, KUBECONFIG: syncKubeconfig, POWERTOOLS_LOG_LEVEL: 'WARN' },
    },
  );
  return stdout;
}

describe('khrun sync', () => {
  it('--dry-run -o yaml renders the CronJobs, says which schedule is not exact, and changes nothing', async () => {
    const yaml = await sync('--dry-run', '-o', 'yaml');
    expect(yaml).toContain('kind: CronJob');
    expect(yaml).toContain('name: khrun-every-five');
    expect(yaml).toMatch(/# note: runInterval 7m0s has no exact cron form; scheduled every 6m0s/);
    expect(yaml).toContain('concurrencyPolicy: Forbid');
    expect((await batch.listNamespacedCronJob({ namespace: ns })).items).toEqual([]);
  });

  it('--dry-run without the runner PodTemplate renders a placeholder runner and says so', async () => {
    const yaml = await sync('--dry-run', '-o', 'yaml', '--pod-template', 'no-such-template');
    // The sync ServiceAccount may read only khrun-runner: another name is forbidden rather than missing.
    expect(yaml.split('\n')[0]).toMatch(
      new RegExp(
        `^# note: the runner PodTemplate ${DEPLOY_NAMESPACE}/no-such-template (does not exist|cannot be read \\(forbidden\\)): rendered with a placeholder runner`,
      ),
    );
    expect(yaml).toMatch(
      new RegExp(`image: '?<image of PodTemplate ${DEPLOY_NAMESPACE}/no-such-template>'?`),
    );
    expect(yaml).toContain('name: khrun-every-five');
    expect((await batch.listNamespacedCronJob({ namespace: ns })).items).toEqual([]);
  });

  it('applies one CronJob per khcheck, owned by it; a second sync changes nothing', async () => {
    const out = await sync();
    expect(out).toMatch(
      new RegExp(`cronjob ${ns}/khrun-every-five created: "(\\*|\\d-59)/5 \\* \\* \\* \\*"`),
    );
    expect(out).toMatch(/note: runInterval 7m0s has no exact cron form/);
    const five = await batch.readNamespacedCronJob({ name: 'khrun-every-five', namespace: ns });
    expect(five.spec).toMatchObject({
      concurrencyPolicy: 'Forbid',
      timeZone: 'Etc/UTC',
      jobTemplate: {
        spec: { backoffLimit: 0, activeDeadlineSeconds: 210, podFailurePolicy: expect.anything() },
      },
    });
    expect(five.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'KuberhealthyCheck',
      name: 'every-five',
    });
    expect(await sync()).toMatch(/cronjob \S+\/khrun-every-five unchanged/);
  });

  it('a manual rerun from the CronJob (kubectl create job --from) runs the check to a recorded outcome', async () => {
    await kubectl(['create', 'job', '--from=cronjob/khrun-every-five', 'every-five-manual', '-n', ns]);
    const state = await waitFor<KhState, KhState>(kc, {
      path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${ns}/${KHSTATE_PLURAL}`,
      fieldSelector: 'metadata.name=every-five',
      decide: (items) => {
        const s = items.get(`${ns}/every-five`);
        return readLastOutcome(s ?? null) ? s : undefined;
      },
      timeoutMs: 90_000,
      description: 'the outcome of the manual run',
    });
    expect(readLastOutcome(state)?.kind).toBe('Succeeded');
    expect(state.spec.AuthoritativePod).toMatch(/^every-five-manual-/);
    await waitFor<V1Job, true>(kc, {
      path: `/apis/batch/v1/namespaces/${ns}/jobs`,
      fieldSelector: 'metadata.name=every-five-manual',
      decide: (items) => (items.get(`${ns}/every-five-manual`)?.status?.succeeded ? true : undefined),
      timeoutMs: 30_000,
      description: 'the manual Job to succeed',
    });
  }, 120_000);

  it('removes the CronJob of a deleted khcheck (garbage collection by owner, and sync itself)', async () => {
    // An orphan sync made earlier, whose khcheck is gone and whose owner reference was lost.
    await batch.createNamespacedCronJob({
      namespace: ns,
      body: {
        metadata: {
          name: 'khrun-gone',
          labels: { 'app.kubernetes.io/managed-by': 'khrun', 'app.kubernetes.io/component': 'check-cronjob' },
          annotations: { 'khrun.dev/check-name': 'gone', 'khrun.dev/check-namespace': ns },
        },
        spec: {
          schedule: '* * * * *',
          suspend: true,
          jobTemplate: {
            spec: {
              template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } },
            },
          },
        },
      },
    });
    await kc.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHCHECK_PLURAL,
      namespace: ns,
      name: 'every-seven',
    });
    const out = await sync();
    expect(out).toContain(`cronjob ${ns}/khrun-gone deleted (khcheck ${ns}/gone is gone)`);
    const left = await waitFor<V1CronJob, string[]>(kc, {
      path: `/apis/batch/v1/namespaces/${ns}/cronjobs`,
      decide: (items) => {
        const names = [...items.values()].map((c) => c.metadata?.name ?? '').sort();
        return names.length === 1 ? names : undefined;
      },
      timeoutMs: 30_000,
      description: 'only the CronJob of the remaining khcheck',
    });
    expect(left).toEqual(['khrun-every-five']);
  }, 60_000);
});
