import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { resolveKubectl } from '@khrun/devkit/local/binaries.ts';
import { CoreV1Api, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { waitForSet } from '../../lib/kube/list-watch.ts';
import { repoRoot } from './bench-cluster.ts';

const run = promisify(execFile);
export const PRELOAD = join(import.meta.dirname, 'maxrss-preload.mjs');

/** The image's entrypoint as local argv (as the integration tests run it), with the peak-memory preload. */
async function entrypoint(dist: string): Promise<string[]> {
  const dockerfile = await readFile(join(repoRoot, 'infra/image/Dockerfile'), 'utf8');
  let argv = JSON.parse(/^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1] ?? '[]') as string[];
  if (argv[0]?.endsWith('/tini')) argv = argv.slice(argv[1] === '--' ? 2 : 1);
  argv = argv.map((a) => (a === 'node' ? process.execPath : a.replace(/^\/app\/dist\//, `${dist}/`)));
  return [argv[0] ?? process.execPath, '--import', PRELOAD, ...argv.slice(1)];
}

/** infra/deploy as shipped, applied with kubectl -k through an overlay that only swaps the image for local commands. */
export async function deployForScale(kubeconfig: string, cacheDir: string, dist: string): Promise<void> {
  const dir = join(repoRoot, '.khrun/bench-overlay');
  await mkdir(dir, { recursive: true });
  const command = JSON.stringify(await entrypoint(dist));
  const rel = relative(dir, join(repoRoot, 'infra/deploy'));
  await writeFile(
    join(dir, 'kustomization.yaml'),
    [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      `resources: [${rel}]`,
      'patches:',
      `  - target: { kind: PodTemplate }`,
      `    patch: '[{"op": "add", "path": "/template/spec/containers/0/command", "value": ${command}}]'`,
      // The benchmark runs its own ticks; the every-minute CronJob would race them.
      `  - target: { kind: CronJob, name: khrun-tick }`,
      `    patch: '[{"op": "add", "path": "/spec/suspend", "value": true}]'`,
      '',
    ].join('\n'),
  );
  const kubectl = await resolveKubectl({ cacheDir, buildDir: join(repoRoot, 'infra/build') });
  await run(kubectl, [`--kubeconfig=${kubeconfig}`, 'apply', '--server-side', '-k', dir], {
    maxBuffer: 64 << 20,
  });
}

/**
 * The local cluster has one node, registered with a real kubelet's defaults (110 pods) and this machine's
 * 2 CPUs, on which the runner's 50m CPU request fits 40 times. A cluster that runs 1,000 checks has many
 * nodes: the benchmark declares room for every pod it creates, so that what it measures is khrun's path and
 * this machine, not one node's pod limit. Returns the capacity as set (the figure records it).
 */
export async function declareNodeRoom(kc: KubeConfig, pods: number): Promise<{ pods: string; cpu: string }> {
  const core = kc.makeApiClient(CoreV1Api);
  const node = (await core.listNode()).items[0];
  if (!node?.metadata?.name || !node.status) throw new Error('the local cluster has no node');
  const room = { pods: String(pods), cpu: String(Math.ceil(pods / 10)) };
  node.status.capacity = { ...node.status.capacity, ...room };
  node.status.allocatable = { ...node.status.allocatable, ...room };
  await core.replaceNodeStatus({ name: node.metadata.name, body: node });
  return room;
}

/** The node's pod and CPU capacity now (a status rewrite by the process kubelet would undo declareNodeRoom). */
export async function nodeRoom(kc: KubeConfig): Promise<{ pods: string; cpu: string }> {
  const node = (await kc.makeApiClient(CoreV1Api).listNode()).items[0];
  return {
    pods: node?.status?.allocatable?.pods ?? '?',
    cpu: node?.status?.allocatable?.cpu ?? '?',
  };
}

/** The label by which an admin lets khrun's checker pods use a namespace's credentials and labels (policy 1c). */
export const CHECKER_CREDENTIALS_LABEL = 'khrun.dev/checker-credentials';

/**
 * Labels a namespace as an admin does before khrun runs Kuberhealthy's own checks there (their pods carry
 * extraLabels or a ServiceAccount of their own, which policy 1c refuses in an unlabelled namespace).
 */
export async function openToCheckerCredentials(kc: KubeConfig, namespace: string): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .patchNamespace(
      { name: namespace, body: { metadata: { labels: { [CHECKER_CREDENTIALS_LABEL]: 'allowed' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
}

/** A fresh namespace with its default ServiceAccount (pods cannot be created before it exists). */
export async function scaleNamespace(kc: KubeConfig, namespace: string): Promise<void> {
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  await waitForSet({
    kc,
    path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
    fieldSelector: 'metadata.name=default',
    timeoutMs: 30_000,
    description: `the default ServiceAccount of ${namespace}`,
    decide: (items) => (items.size > 0 ? true : undefined),
  });
}
