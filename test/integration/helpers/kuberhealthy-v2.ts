import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { buildKuberhealthyV2, type KuberhealthyV2Build } from '@khrun/devkit/local/kuberhealthy-v2.ts';
import { dumpYaml, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import {
  daemonObjects,
  inNamespace,
  khjobsCrd,
  type ManifestObject,
  type Rewrite,
} from '../../compat/v2-manifests.ts';
import { waitFor } from './cluster.ts';
import { kubectl } from './deploy.ts';
import { repoRoot } from './khrun.ts';

/**
 * The real Kuberhealthy v2.7.1 daemon on the integration cluster, run as the Deployment of its own
 * deploy/kuberhealthy.yaml (module `github.com/kuberhealthy/kuberhealthy/v2@v2.7.1`, built by the global
 * setup; the process kubelet maps the image `kuberhealthy/kuberhealthy` and its `/app/kuberhealthy` to that
 * build: infra/devkit/src/local/kuberhealthy-v2.ts).
 *
 * API (stable: other tests build on it):
 * - `startKuberhealthyV2(kc, {namespace, replicas?})`: applies the daemon's objects into `namespace` (an
 *   existing one; the test owns it) and waits until `replicas` pods (default: the YAML's 2) are Running.
 * - `daemon.scale(n)`: `kubectl scale`, then waits until exactly n `app=kuberhealthy` pods run in the
 *   namespace, none terminating; `scale(0)` returns once no such pod exists at all (no process left).
 * - `daemon.pods()`, `daemon.master()`: the pods, and the master by v2's rule (the first Running pod by name).
 * - `daemon.stop()`: scale(0), then deletes the Deployment and the cluster-scoped RBAC it applied; after it,
 *   no Kuberhealthy pod runs, so no later test's khchecks are run by it. Idempotent; call it in afterAll.
 * - `daemon.rewrites`: what differs from the YAML (also daemonObjects in test/compat/v2-manifests.ts):
 *   the namespace; no PodDisruptionBudget (policy/v1beta1 is not served since Kubernetes 1.25), no CRDs
 *   (khrun's infra/crds; khjobs applied from the YAML when missing) and not its three khchecks; env POD_IP
 *   and KH_EXTERNAL_REPORTING_URL added (no Service ClusterIP is routed on the local cluster).
 * - `applyV2Yaml(path, namespace)`: one of the module's YAMLs (e.g. `cmd/test-check/khcheck.yaml`) applied
 *   into a namespace, moved there by inNamespace and otherwise unedited.
 *
 * v2 runs every khcheck of the cluster (it never limits itself to a namespace): run one at a time, and
 * keep khchecks a test does not want it to run out of the cluster while it is up.
 */
export interface KuberhealthyV2Daemon {
  readonly namespace: string;
  readonly rewrites: readonly Rewrite[];
  scale(replicas: number, timeoutMs?: number): Promise<void>;
  pods(): Promise<V1Pod[]>;
  master(): Promise<V1Pod | undefined>;
  stop(timeoutMs?: number): Promise<void>;
}

export const V2_DEPLOYMENT = 'kuberhealthy';
export const V2_POD_SELECTOR = 'app=kuberhealthy';

function cacheDir(): string {
  return (
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun')
  );
}

let source: Promise<KuberhealthyV2Build> | undefined;

/** The module's sources and the built binaries (cached by the global setup: this only finds them). */
export function kuberhealthyV2Source(): Promise<KuberhealthyV2Build> {
  source ??= buildKuberhealthyV2({ cacheDir: cacheDir(), buildDir: join(repoRoot, 'infra/build') });
  return source;
}

/** Applies objects with kubectl (a file under .khrun/test-overlays, kept for a look after a failure). */
export async function applyObjects(objects: ManifestObject[], name: string): Promise<void> {
  const dir = join(repoRoot, '.khrun/test-overlays');
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, objects.map((o) => dumpYaml(o)).join('---\n'));
  await kubectl(['apply', '-f', file]);
}

/** One of the module's YAMLs (a path inside it) applied into `namespace`. */
export async function applyV2Yaml(
  path: string,
  namespace: string,
): Promise<{ objects: ManifestObject[]; rewrites: Rewrite[] }> {
  const { moduleDir } = await kuberhealthyV2Source();
  const result = inNamespace(await readFile(join(moduleDir, path), 'utf8'), namespace);
  await applyObjects(result.objects, `${namespace}-${path.replaceAll('/', '_')}`);
  return result;
}

/** The khjobs CRD v2.7.1 lists and watches: from infra/crds when shipped there, else from the YAML. */
async function ensureKhjobsCrd(deployYaml: string): Promise<void> {
  const existing = await kubectl([
    'get',
    'crd',
    '--ignore-not-found',
    '-o',
    'name',
    'khjobs.comcast.github.io',
  ]);
  if (existing.trim()) return;
  await applyObjects([khjobsCrd(deployYaml)], 'khjobs-crd-v2.7.1');
  await kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/khjobs.comcast.github.io']);
}

const isRunning = (p: V1Pod) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp;

export async function startKuberhealthyV2(
  kc: KubeConfig,
  opts: { namespace: string; replicas?: number; timeoutMs?: number },
): Promise<KuberhealthyV2Daemon> {
  const { namespace } = opts;
  const { moduleDir } = await kuberhealthyV2Source();
  const deployYaml = await readFile(join(moduleDir, 'deploy/kuberhealthy.yaml'), 'utf8');
  await ensureKhjobsCrd(deployYaml);
  const { objects, rewrites } = daemonObjects(deployYaml, namespace);
  const clusterScoped = objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding');

  const podsNow = () =>
    waitFor<V1Pod, V1Pod[]>(kc, {
      path: `/api/v1/namespaces/${namespace}/pods`,
      labelSelector: V2_POD_SELECTOR,
      decide: (items) => [...items.values()],
      timeoutMs: 10_000,
      description: `the Kuberhealthy pods of ${namespace}`,
    });
  const awaitReplicas = (replicas: number, timeoutMs: number) =>
    waitFor<V1Pod, true>(kc, {
      path: `/api/v1/namespaces/${namespace}/pods`,
      labelSelector: V2_POD_SELECTOR,
      decide: (items) => {
        const pods = [...items.values()];
        if (replicas === 0) return pods.length === 0 ? true : undefined;
        return pods.length === replicas && pods.every(isRunning) ? true : undefined;
      },
      timeoutMs,
      description: `${replicas} Kuberhealthy v2 pod(s) ${replicas ? 'Running' : 'left'} in ${namespace}`,
    });

  let stopped = false;
  const daemon: KuberhealthyV2Daemon = {
    namespace,
    rewrites,
    async scale(replicas, timeoutMs = 90_000) {
      await kubectl(['scale', `deployment/${V2_DEPLOYMENT}`, '-n', namespace, `--replicas=${replicas}`]);
      await awaitReplicas(replicas, timeoutMs);
    },
    pods: podsNow,
    async master() {
      // v2's rule (pkg/masterCalculation): phase Running, terminating or not, first by name.
      const running = (await podsNow()).filter((p) => p.status?.phase === 'Running');
      return running.sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))[0];
    },
    async stop(timeoutMs = 90_000) {
      if (stopped) return;
      const exists = await kubectl([
        'get',
        'deployment',
        V2_DEPLOYMENT,
        '-n',
        namespace,
        '--ignore-not-found',
        '-o',
        'name',
      ]);
      if (exists.trim()) await daemon.scale(0, timeoutMs);
      await kubectl(['delete', 'deployment', V2_DEPLOYMENT, '-n', namespace, '--ignore-not-found']);
      await awaitReplicas(0, timeoutMs);
      for (const o of clusterScoped)
        await kubectl(['delete', (o.kind ?? '').toLowerCase(), o.metadata?.name ?? '', '--ignore-not-found']);
      stopped = true;
    },
  };
  await applyObjects(objects, `${namespace}-kuberhealthy-v2.7.1`);
  const deployment = objects.find((o) => o.kind === 'Deployment')?.spec as { replicas?: number } | undefined;
  if (opts.replicas !== undefined && opts.replicas !== deployment?.replicas)
    await daemon.scale(opts.replicas, opts.timeoutMs);
  else await awaitReplicas(deployment?.replicas ?? 1, opts.timeoutMs ?? 90_000);
  return daemon;
}
