import { CoreV1Api, PolicyV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { kubePort } from '../../lib/kube/kube-port.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor, waitForPhase } from './helpers/cluster.ts';
import { serviceAccountKubeConfig } from './helpers/deploy.ts';
import { podOf, shContainer } from './helpers/pods.ts';

// KubePort.removePod on the real API server: it evicts, and deletes instead only where eviction is not
// served. A disruption budget's 429 and a forbidden eviction (403) leave the pod where it is.

const admin = adminKubeConfig();
let ns: string;

beforeAll(async () => {
  ns = await freshNamespace(admin, 'removal');
}, 60_000);
afterAll(async () => {
  await dropNamespace(admin, ns);
});

/** A running pod labelled app=<name>; its name. */
async function runningPod(name: string): Promise<string> {
  const body = podOf(name, [shContainer('main', 'sleep 3600')]);
  body.metadata = { name, labels: { app: name } };
  await admin.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: ns, body });
  // A Pending pod may be evicted whatever the budget says; only a running one tests it.
  await waitForPhase(admin, ns, name, 'Running');
  return name;
}

async function stillThere(name: string): Promise<boolean> {
  const pod = await admin
    .makeApiClient(CoreV1Api)
    .readNamespacedPod({ namespace: ns, name })
    .catch(() => undefined);
  return pod !== undefined && !pod.metadata?.deletionTimestamp;
}

describe('removePod: eviction, and delete only where eviction is not served', () => {
  it('evicts a pod no budget protects', async () => {
    const name = await runningPod('free');
    expect(await kubePort(kubeClient(admin)).removePod(ns, name)).toEqual({ kind: 'evicted' });
    expect(await stillThere(name)).toBe(false);
  }, 90_000);

  it('leaves a pod whose disruption budget refuses the eviction (429): never deletes it instead', async () => {
    const name = await runningPod('guarded');
    await admin.makeApiClient(PolicyV1Api).createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: { metadata: { name }, spec: { minAvailable: 1, selector: { matchLabels: { app: name } } } },
    });
    // The disruption controller's verdict first, so the refusal is the budget's and not "still processing".
    await waitFor(admin, {
      path: `/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets`,
      fieldSelector: `metadata.name=${name}`,
      decide: (items) => {
        const pdb = items.get(`${ns}/${name}`) as { status?: { currentHealthy?: number } } | undefined;
        return pdb?.status?.currentHealthy !== undefined ? true : undefined;
      },
      timeoutMs: 60_000,
      description: `the disruption budget ${name} observed`,
    });
    expect(await kubePort(kubeClient(admin)).removePod(ns, name)).toMatchObject({
      kind: 'kept',
      status: 429,
    });
    expect(await stillThere(name)).toBe(true);
  }, 120_000);

  it('leaves a pod whose eviction is forbidden (403), even to an identity that may delete it', async () => {
    const name = await runningPod('forbidden');
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await admin
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'deleter' } } });
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: 'deleter' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'delete'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'deleter' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'deleter' },
        subjects: [{ kind: 'ServiceAccount', name: 'deleter', namespace: ns }],
      },
    });
    const deleter = await serviceAccountKubeConfig(admin, ns, 'deleter');
    expect(await kubePort(kubeClient(deleter)).removePod(ns, name)).toMatchObject({
      kind: 'kept',
      status: 403,
    });
    expect(await stillThere(name)).toBe(true);
  }, 90_000);

  it('treats a pod that is already gone as removed', async () => {
    // The API server's 404 names the pod (details.kind pods), which is how it is told from an unserved path.
    expect(await kubePort(kubeClient(admin)).removePod(ns, 'never-existed')).toEqual({ kind: 'gone' });
  });
});
