import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { kuberhealthyV3ModuleDir } from '@khrun/devkit/local/kuberhealthy-v3.ts';
import {
  AppsV1Api,
  DiscoveryV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHART_DIR } from '../../infra/helm/render-deploy.ts';
import { findKuberhealthy } from '../../lib/takeover/installations.ts';
import { objectsOfYaml } from '../compat/kuberhealthy-installs.ts';
import type { ManifestObject } from '../compat/v2-manifests.ts';
import { adminKubeConfig, waitFor } from './helpers/cluster.ts';
import { applyDeploy, buildTestBundles, DEPLOY_NAMESPACE, kubectl } from './helpers/deploy.ts';
import { helmBinary, runHelm } from './helpers/helm.ts';
import { repoRoot } from './helpers/khrun.ts';
import { applyObjects, kuberhealthyV2Source } from './helpers/kuberhealthy-v2.ts';

// khrun installed beside a running Kuberhealthy v2.7.1 and v3.0.0, as a platform team would try it: their
// own manifests applied first (v2.7.1's deploy/kuberhealthy.yaml into the namespace kuberhealthy, v3.0.0's
// deploy/kustomize/base), then khrun's kustomization (`kubectl create -k infra/crds`, `kubectl apply -k`
// of infra/deploy with the serve component) and the chart (`helm install` into Kuberhealthy v2's own
// namespace, the server on, `helm test`, `helm uninstall`). Every object of theirs keeps its
// resourceVersion (a Deployment, whose status moves with its pods: its generation, labels, annotations and
// spec), Kuberhealthy's pods keep running, its Service keeps selecting only its own pods, and `khrun
// takeover`'s search finds their two Deployments and not khrun's server.
//
// What differs from their files, and why: v2.7.1's PodDisruptionBudget is policy/v1beta1, which
// Kubernetes no longer serves, and its three default khchecks would run daemonset and deployment checks on
// the suite's cluster: both left out; its namespace is created first, as its install says. v3.0.0's base
// goes to the namespace kuberhealthy-v3 (its objects in kuberhealthy are v2's names too: two Kuberhealthy
// in one namespace cannot be), with one replica (its two repel each other by hostname; this cluster has one
// node) and without its example HealthCheck.

const kc = adminKubeConfig();
const api = KubernetesObjectApi.makeApiClient(kc);
const V2_NS = 'kuberhealthy';
const V3_NS = 'kuberhealthy-v3';
const RELEASE = 'khrun';
let helm: string;
const theirs: ManifestObject[] = [];

/** A snapshot of an object of theirs: what must not change. */
function fingerprint(o: KubernetesObject & Record<string, unknown>): unknown {
  const m = o.metadata ?? {};
  // A Deployment's status (and so its resourceVersion) follows its pods; its generation follows its spec.
  if (o.kind === 'Deployment')
    return { generation: m.generation, labels: m.labels, annotations: m.annotations, spec: o.spec };
  return { resourceVersion: m.resourceVersion };
}

async function snapshot(): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const o of theirs) {
    const live = await api.read({
      apiVersion: o.apiVersion!,
      kind: o.kind!,
      metadata: { name: o.metadata!.name!, namespace: o.metadata?.namespace },
    });
    out.set(`${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`, fingerprint(live as never));
  }
  return out;
}

/** Their pods Running: v2's two daemon pods, v3's controller. */
async function kuberhealthyRunning(): Promise<{ v2: V1Pod[]; v3: V1Pod[] }> {
  const running = (namespace: string, count: number) =>
    waitFor<V1Pod, V1Pod[]>(kc, {
      path: `/api/v1/namespaces/${namespace}/pods`,
      labelSelector: 'app=kuberhealthy',
      decide: (items) => {
        const pods = [...items.values()].filter(
          (p) => p.status?.phase === 'Running' && p.status.podIP && !p.metadata?.deletionTimestamp,
        );
        return pods.length === count && items.size === count ? pods : undefined;
      },
      timeoutMs: 120_000,
      description: `${count} running Kuberhealthy pods in ${namespace}`,
    });
  return { v2: await running(V2_NS, 2), v3: await running(V3_NS, 1) };
}

/** The pod IPs behind Kuberhealthy v2's Service (its EndpointSlices): its own pods, nobody else's. */
async function v2ServiceBackends(): Promise<string[]> {
  const slices = await kc.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({
    namespace: V2_NS,
    labelSelector: 'kubernetes.io/service-name=kuberhealthy',
  });
  return slices.items.flatMap((s) => s.endpoints.flatMap((e) => e.addresses)).sort();
}

beforeAll(async () => {
  helm = await helmBinary();
  await buildTestBundles();

  // Kuberhealthy v2.7.1, from its module's deploy/kuberhealthy.yaml, unedited but for what is left out.
  const { moduleDir } = await kuberhealthyV2Source();
  const v2 = objectsOfYaml(await readFile(join(moduleDir, 'deploy/kuberhealthy.yaml'), 'utf8')).filter(
    (o) => o.kind !== 'PodDisruptionBudget' && o.kind !== 'KuberhealthyCheck',
  );
  // Its install creates the namespace first (the YAML has none).
  if (!(await kubectl(['get', 'namespace', V2_NS, '--ignore-not-found', '-o', 'name'])).trim())
    await kubectl(['create', 'namespace', V2_NS]);
  await applyObjects(v2, 'beside-kuberhealthy-v2.7.1');

  // Kuberhealthy v3.0.0's kustomize base as kubectl renders it, moved to its own namespace.
  const base = join(await kuberhealthyV3ModuleDir(join(repoRoot, 'infra/build')), 'deploy/kustomize/base');
  const v3 = objectsOfYaml(await kubectl(['kustomize', base]))
    .filter((o) => o.kind !== 'HealthCheck')
    .map((o) => {
      const moved = structuredClone(o) as ManifestObject & {
        subjects?: Array<{ namespace?: string }>;
        spec?: { replicas?: number };
      };
      if (moved.kind === 'Namespace') moved.metadata!.name = V3_NS;
      if (moved.metadata?.namespace) moved.metadata.namespace = V3_NS;
      for (const s of moved.subjects ?? []) if (s.namespace) s.namespace = V3_NS;
      if (moved.kind === 'Deployment') moved.spec!.replicas = 1;
      return moved;
    });
  await applyObjects(v3, 'beside-kuberhealthy-v3.0.0');

  theirs.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: V2_NS } }, ...v2, ...v3);
  await kuberhealthyRunning();
}, 1_500_000);

afterAll(async () => {
  await runHelm(helm, ['uninstall', RELEASE, '-n', V2_NS, '--ignore-not-found', '--wait']).catch(
    () => undefined,
  );
  // Unscoped, the kustomization's tick would dispatch the khchecks of the rest of the suite.
  await kubectl(['delete', 'cronjob', 'khrun-tick', '-n', DEPLOY_NAMESPACE, '--ignore-not-found']).catch(
    () => undefined,
  );
  // Theirs, but the CRDs (the suite's too): no Kuberhealthy may run the later tests' checks.
  for (const o of [...theirs].reverse().filter((o) => o.kind !== 'CustomResourceDefinition'))
    await api
      .delete({ apiVersion: o.apiVersion!, kind: o.kind!, metadata: o.metadata as never })
      .catch(() => undefined);
  await kubectl(['delete', 'pod', 'khrun-test', '-n', V2_NS, '--ignore-not-found']).catch(() => undefined);
});

describe('khrun beside a running Kuberhealthy v2.7.1 and v3.0.0', () => {
  it('installs by its kustomization and by its chart, and changes nothing of theirs; both keep running', async () => {
    const before = await snapshot();
    // Every object of both installs: the CRDs, v2's daemon, RBAC and ConfigMap, v3's controller and RBAC.
    expect(before.size).toBeGreaterThan(25);
    const { v2: v2Pods } = await kuberhealthyRunning();
    const v2Ips = v2Pods.map((p) => p.status!.podIP!).sort();
    expect(await v2ServiceBackends()).toEqual(v2Ips);
    const unchanged = async (step: string) => {
      const now = await snapshot();
      for (const [key, value] of before) expect(now.get(key), `${key} after ${step}`).toEqual(value);
    };

    // The CRDs, as infra/crds/kustomization.yaml says beside a Kuberhealthy: create leaves theirs alone.
    await expect(kubectl(['create', '-k', join(repoRoot, 'infra/crds')])).rejects.toThrow(/AlreadyExists/);
    // The kustomization, with the server.
    await applyDeploy({ name: 'beside-kuberhealthy', components: ['serve'] });
    await waitFor<V1Pod, true>(kc, {
      path: `/api/v1/namespaces/${DEPLOY_NAMESPACE}/pods`,
      labelSelector: 'app.kubernetes.io/component=server',
      decide: (items) =>
        [...items.values()].filter((p) => p.status?.phase === 'Running').length === 2 ? true : undefined,
      timeoutMs: 120_000,
      description: "the kustomization's two server pods running",
    });
    await unchanged('kubectl apply -k infra/deploy');

    // The chart, in Kuberhealthy v2's own namespace, server on (two pods and a PodDisruptionBudget beside
    // v2's). --take-ownership: the kustomization above made the same cluster-wide khrun-* objects (a user
    // moves from one to the other so); it adopts khrun's only, as no name is theirs. The suite's admission
    // policies (the kustomization's) stay out of the release: an uninstall would delete them
    // (kubernetes/kubernetes#130887, README of the chart).
    const installed = await runHelm(helm, [
      'install',
      RELEASE,
      join(repoRoot, CHART_DIR),
      '-n',
      V2_NS,
      '--take-ownership',
      '--set',
      'server.enabled=true,server.replicas=2,admissionPolicy.enabled=false',
      '--set',
      `namespaces={${V2_NS}}`,
      '--wait',
      '--timeout',
      '3m',
    ]);
    expect(installed).toMatch(/STATUS: deployed/);
    await unchanged('helm install -n kuberhealthy');

    const tested = await runHelm(helm, ['test', RELEASE, '-n', V2_NS, '--logs', '--timeout', '2m']);
    expect(tested).toMatch(/Phase:\s+Succeeded/);
    expect(tested).toContain('ok: the server answers /healthz behind its Service khrun-server');
    expect(tested).not.toContain('FAILED');

    // Side by side in one namespace: their Service still selects their pods only; khrun's its own.
    const { v2: v2Now } = await kuberhealthyRunning();
    expect(v2Now.map((p) => p.metadata?.name).sort()).toEqual(v2Pods.map((p) => p.metadata?.name).sort());
    expect(await v2ServiceBackends()).toEqual(v2Ips);
    // `khrun takeover`/`handback` look for a Kuberhealthy among the Deployments: theirs, not khrun-server.
    const deployments = [
      ...(await kc.makeApiClient(AppsV1Api).listDeploymentForAllNamespaces()).items,
    ] as V1Deployment[];
    expect(deployments.map((d) => `${d.metadata?.namespace}/${d.metadata?.name}`)).toEqual(
      expect.arrayContaining([`${V2_NS}/khrun-server`, `${DEPLOY_NAMESPACE}/khrun-server`]),
    );
    expect(
      findKuberhealthy(deployments).map((i) => ({ ref: `${i.namespace}/${i.name}`, line: i.line })),
    ).toEqual([
      { ref: `${V3_NS}/kuberhealthy`, line: 'v3' },
      { ref: `${V2_NS}/kuberhealthy`, line: 'v2' },
    ]);

    const uninstalled = await runHelm(helm, ['uninstall', RELEASE, '-n', V2_NS, '--wait', '--timeout', '2m']);
    expect(uninstalled).toMatch(/release "khrun" uninstalled/);
    await unchanged('helm uninstall');
    await kuberhealthyRunning();
    expect(await v2ServiceBackends()).toEqual(v2Ips);
  }, 900_000);
});
