import { CoreV1Api, PolicyV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeClient } from '../../lib/kube/kube-client.ts';
import { kubePort } from '../../lib/kube/kube-port.ts';
import {
  adminKubeConfig,
  dropNamespace,
  freshNamespace,
  waitFor,
  waitForPhase,
  waitForPod,
} from './helpers/cluster.ts';
import { serviceAccountKubeConfig } from './helpers/deploy.ts';
import { podOf, shContainer } from './helpers/pods.ts';

// KubePort.removePod on the real API server: a graceful DELETE (the pod's own grace period), never an
// eviction (lib/kube/pod-removal.ts says why). A pod already gone is success; a refused delete keeps the pod.

const admin = adminKubeConfig();
let ns: string;

beforeAll(async () => {
  ns = await freshNamespace(admin, 'removal');
}, 60_000);
afterAll(async () => {
  await dropNamespace(admin, ns);
});

/** A running pod labelled app=<name> with the given grace period; its uid. */
async function runningPod(name: string, terminationGracePeriodSeconds = 5): Promise<string> {
  const body = podOf(name, [shContainer('main', 'sleep 3600')], { terminationGracePeriodSeconds });
  body.metadata = { name, labels: { app: name } };
  await admin.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: ns, body });
  return (await waitForPhase(admin, ns, name, 'Running')).metadata!.uid!;
}

/** A pod bound to a node that does not exist: a delete leaves it Terminating (no kubelet confirms it). */
async function boundNowhere(name: string, terminationGracePeriodSeconds: number): Promise<void> {
  const body = podOf(name, [shContainer('main', 'sleep 3600')], {
    nodeName: 'no-such-node',
    terminationGracePeriodSeconds,
  });
  await admin.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: ns, body });
}

const read = (name: string) =>
  admin
    .makeApiClient(CoreV1Api)
    .readNamespacedPod({ namespace: ns, name })
    .catch(() => undefined);

async function stillThere(name: string): Promise<boolean> {
  const pod = await read(name);
  return pod !== undefined && !pod.metadata?.deletionTimestamp;
}

const gone = (name: string) =>
  waitForPod(admin, ns, name, (pod) => (pod ? undefined : true), 'gone after the delete');

describe('removePod: a graceful delete, never an eviction', () => {
  it("deletes with the pod's own grace period (no shorter one of its own)", async () => {
    await boundNowhere('graceful', 47);
    expect(await kubePort(kubeClient(admin)).removePod(ns, 'graceful')).toEqual({ kind: 'deleted' });
    const pod = await read('graceful');
    expect(pod?.metadata?.deletionTimestamp).toBeDefined();
    expect(pod?.metadata?.deletionGracePeriodSeconds).toBe(47);
  });

  it('removes a running pod: gone once the kubelet confirms', async () => {
    const uid = await runningPod('running');
    expect(await kubePort(kubeClient(admin)).removePod(ns, 'running', uid)).toEqual({ kind: 'deleted' });
    expect(await gone('running')).toBe(true);
  }, 90_000);

  it('is not held by a disruption budget: no budget is meant for a checker pod', async () => {
    const name = 'budgeted';
    await runningPod(name);
    await admin.makeApiClient(PolicyV1Api).createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: { metadata: { name }, spec: { minAvailable: 1, selector: { matchLabels: { app: name } } } },
    });
    // The disruption controller's verdict first, so an eviction now would be refused by the budget.
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
    expect(await kubePort(kubeClient(admin)).removePod(ns, name)).toEqual({ kind: 'deleted' });
    expect(await gone(name)).toBe(true);
  }, 120_000);

  it('leaves a pod that only shares the name (uid precondition): gone, for the caller', async () => {
    await boundNowhere('renamed', 5);
    expect(
      await kubePort(kubeClient(admin)).removePod(ns, 'renamed', '00000000-0000-4000-8000-000000000000'),
    ).toEqual({ kind: 'gone' });
    expect(await stillThere('renamed')).toBe(true);
  });

  it('leaves a pod whose delete is forbidden (403), saying so', async () => {
    await boundNowhere('forbidden', 5);
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await admin
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'reader' } } });
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: 'reader' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
      },
    });
    const reader = await serviceAccountKubeConfig(admin, ns, 'reader');
    expect(await kubePort(kubeClient(reader)).removePod(ns, 'forbidden')).toMatchObject({
      kind: 'kept',
      status: 403,
    });
    expect(await stillThere('forbidden')).toBe(true);
  });

  it('treats a pod that is already gone as removed', async () => {
    expect(await kubePort(kubeClient(admin)).removePod(ns, 'never-existed')).toEqual({ kind: 'gone' });
    expect(await kubePort(kubeClient(admin)).removePod(ns, 'never-existed', 'some-uid')).toEqual({
      kind: 'gone',
    });
  });
});
