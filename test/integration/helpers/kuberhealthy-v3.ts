import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { kuberhealthyV3ModuleDir } from '@khrun/devkit/local/kuberhealthy-v3.ts';
import {
  CoordinationV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { waitFor } from './cluster.ts';
import { repoRoot } from './khrun.ts';

/** The Lease v3's leader election takes (`KH_LEADER_ELECTION_NAME` default), in the controller's namespace. */
export const V3_LEASE = 'kuberhealthy-controller';
/** v3's finalizer on every HealthCheck its leader has seen (internal/kuberhealthy/finalizer.go). */
export const V3_FINALIZER = 'kuberhealthy.io/healthcheck';

export interface KuberhealthyV3 {
  namespace: string;
  podName: string;
  /** http://<pod IP>:8080: v3's UI, /json, /metrics and the /check report route. */
  baseUrl: string;
  /** Takes the Lease from the controller: it stops its leader tasks and keeps serving HTTP. */
  demote(holder: string): Promise<void>;
  /** Removes everything start made and waits until the controller's pod is gone. */
  stop(): Promise<void>;
}

/**
 * Kuberhealthy v3.0.0's controller from its own manifests (deploy/kustomize/base of the module: the
 * ServiceAccount, ClusterRole and binding, the Deployment), moved into `namespace` with these changes
 * only: cluster-scoped names suffixed with the namespace; one replica (the manifest's two repel each other
 * by hostname and this cluster has one node); and KH_CHECK_REPORT_URL set to the pod's own address, since
 * no Service ClusterIP is routed here (checker pods reach real addresses). The image
 * `kuberhealthy/kuberhealthy:main` runs the build the global setup mapped to it.
 */
export async function startKuberhealthyV3(
  kc: KubeConfig,
  namespace: string,
  env: Record<string, string> = {},
): Promise<KuberhealthyV3> {
  const base = join(await kuberhealthyV3ModuleDir(join(repoRoot, 'infra/build')), 'deploy/kustomize/base');
  const read = async (file: string) =>
    loadAllYaml(await readFile(join(base, file), 'utf8')) as KubernetesObject[];
  const suffix = `-${namespace}`;
  const objects: KubernetesObject[] = [];
  for (const o of await read('serviceaccount.yaml'))
    objects.push({ ...o, metadata: { ...o.metadata, namespace } });
  type RbacObject = KubernetesObject & { roleRef: { name: string }; subjects: object[] };
  for (const o of (await read('clusterrole.yaml')) as RbacObject[]) {
    const name = `${o.metadata?.name}${suffix}`;
    if (o.kind === 'ClusterRoleBinding') {
      objects.push({
        ...o,
        metadata: { name },
        roleRef: { ...o.roleRef, name: `${o.roleRef.name}${suffix}` },
        subjects: o.subjects.map((s) => ({ ...s, namespace })),
      } as KubernetesObject);
    } else objects.push({ ...o, metadata: { name } });
  }
  const [deployment] = (await read('deployment.yaml')) as V1Deployment[];
  if (!deployment?.spec?.template.spec) throw new Error(`no Deployment in ${base}/deployment.yaml`);
  const container = deployment.spec.template.spec.containers[0]!;
  const overrides: Record<string, string> = {
    KH_CHECK_REPORT_URL: 'http://$(POD_IP):8080',
    KH_DEFAULT_NAMESPACE: namespace,
    ...env,
  };
  const kept = (container.env ?? []).filter((e) => !(e.name in overrides));
  container.env = [
    // First, so $(POD_IP) expands in the variables after it (Kubernetes' dependent-variable rule).
    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ...kept,
    ...Object.entries(overrides).map(([name, value]) => ({ name, value })),
  ];
  deployment.metadata = { ...deployment.metadata, namespace };
  deployment.spec.replicas = 1;
  objects.push(deployment as KubernetesObject);

  const api = KubernetesObjectApi.makeApiClient(kc);
  const created: KubernetesObject[] = [];
  const stop = async () => {
    for (const o of [...created].reverse()) await api.delete(o).catch(() => undefined);
    await waitFor<V1Pod, true>(kc, {
      path: `/api/v1/namespaces/${namespace}/pods`,
      labelSelector: 'app=kuberhealthy',
      decide: (items) => (items.size === 0 ? true : undefined),
      timeoutMs: 60_000,
      description: `Kuberhealthy v3's pods in ${namespace} to be gone`,
    });
  };
  try {
    for (const o of objects) created.push(await api.create(o));
    const pod = await waitFor<V1Pod, V1Pod>(kc, {
      path: `/api/v1/namespaces/${namespace}/pods`,
      labelSelector: 'app=kuberhealthy',
      decide: (items) => [...items.values()].find((p) => p.status?.phase === 'Running' && p.status.podIP),
      timeoutMs: 60_000,
      description: `Kuberhealthy v3's controller pod in ${namespace} to run`,
    });
    const baseUrl = `http://${pod.status!.podIP}:8080`;
    await untilAnswers(`${baseUrl}/healthz`, 30_000);
    return {
      namespace,
      podName: pod.metadata!.name!,
      baseUrl,
      demote: (holder) => takeLease(kc, namespace, holder),
      stop,
    };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}

/**
 * Writes the leader Lease to another holder for an hour. v3's elector (client-go) then sees a valid lease
 * held by someone else, fails to renew, and after its renew deadline (10 s by default) stops its leader
 * tasks (schedule loop, informer, reaper, timeouts); its `elector.Run` is started once, so it never
 * campaigns again while the web server keeps answering.
 */
async function takeLease(kc: KubeConfig, namespace: string, holder: string): Promise<void> {
  // MicroTime wants microseconds; the client's Date serialisation writes milliseconds (a 400), so a merge
  // patch carries the strings as the API server expects them.
  const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
  await kc.makeApiClient(CoordinationV1Api).patchNamespacedLease(
    {
      name: V3_LEASE,
      namespace,
      body: {
        spec: { holderIdentity: holder, leaseDurationSeconds: 3600, acquireTime: now, renewTime: now },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** Removes v3's finalizer from HealthChecks in a namespace (a stopped controller never does). */
export async function dropV3Finalizers(kc: KubeConfig, namespace: string): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const co = { group: 'kuberhealthy.github.io', version: 'v2', plural: 'healthchecks', namespace };
  const list = (await custom.listNamespacedCustomObject(co)) as { items: KubernetesObject[] };
  for (const hc of list.items) {
    const finalizers = hc.metadata?.finalizers ?? [];
    if (!finalizers.includes(V3_FINALIZER)) continue;
    await custom.patchNamespacedCustomObject(
      {
        ...co,
        name: hc.metadata!.name!,
        body: [
          {
            op: 'replace',
            path: '/metadata/finalizers',
            value: finalizers.filter((f) => f !== V3_FINALIZER),
          },
        ],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
  }
}

/** The web server starts a moment after the pod turns Running: retried, bounded by the deadline. */
async function untilAnswers(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 1_000)) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, delayMs));
  }
}

export const khrunCacheDir = (): string =>
  process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');
