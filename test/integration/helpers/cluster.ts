import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { waitForSet } from '../../../lib/kube/list-watch.ts';

/** The admin KubeConfig of the run's shared cluster (system:masters). */
export function adminKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(inject('kubeconfigPath'));
  return kc;
}

/** A name unique to this run, usable for namespaces and other objects. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/**
 * Creates a namespace and waits, by watch, until the ServiceAccount controller has made its `default`
 * ServiceAccount: before that, the ServiceAccount admission plugin rejects every pod in it.
 */
export async function freshNamespace(kc: KubeConfig, prefix = 'kt', timeoutMs = 30_000): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const name = uniqueName(prefix);
  await core.createNamespace({ body: { metadata: { name, labels: { 'khrun.io/test': 'true' } } } });
  await waitFor<KubernetesObject, true>(kc, {
    path: `/api/v1/namespaces/${name}/serviceaccounts`,
    fieldSelector: 'metadata.name=default',
    decide: (items) => (items.size > 0 ? true : undefined),
    timeoutMs,
    description: `the default ServiceAccount of namespace ${name}`,
  });
  return name;
}

/** Deletes a namespace without waiting (its pods are deleted gracefully by the namespace controller). */
export async function dropNamespace(kc: KubeConfig, name: string): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name })
    .catch(() => undefined);
}

/** Resolves with the first non-undefined decide(items) of a watched collection; rejects at the deadline. */
export function waitFor<T extends KubernetesObject, R>(
  kc: KubeConfig,
  opts: {
    path: string;
    fieldSelector?: string;
    labelSelector?: string;
    decide: (items: ReadonlyMap<string, T>) => R | undefined;
    timeoutMs: number;
    description: string;
  },
): Promise<R> {
  return waitForSet<T, R>({ kc, ...opts });
}

/**
 * Watches one pod until decide(pod) returns a value; `gone` is passed as undefined once the pod does
 * not exist (so a wait can also be for its deletion).
 */
export function waitForPod<R>(
  kc: KubeConfig,
  namespace: string,
  name: string,
  decide: (pod: V1Pod | undefined) => R | undefined,
  description: string,
  timeoutMs = 60_000,
): Promise<R> {
  return waitFor<V1Pod, R>(kc, {
    path: `/api/v1/namespaces/${namespace}/pods`,
    fieldSelector: `metadata.name=${name}`,
    decide: (items) => decide(items.get(`${namespace}/${name}`)),
    timeoutMs,
    description: `pod ${namespace}/${name}: ${description}`,
  });
}

/** Waits for a phase; rejects early with the pod's status when it reaches a different terminal phase. */
export async function waitForPhase(
  kc: KubeConfig,
  namespace: string,
  name: string,
  phase: 'Running' | 'Succeeded' | 'Failed',
  timeoutMs = 60_000,
): Promise<V1Pod> {
  const result = await waitForPod(
    kc,
    namespace,
    name,
    (pod) => {
      const current = pod?.status?.phase;
      if (current === phase) return { pod };
      if (current !== phase && (current === 'Succeeded' || current === 'Failed')) return { unexpected: pod };
      return undefined;
    },
    `phase ${phase}`,
    timeoutMs,
  );
  if ('unexpected' in result) {
    throw new Error(
      `pod ${namespace}/${name} reached ${result.unexpected?.status?.phase}, not ${phase}: ${JSON.stringify(result.unexpected?.status)}`,
    );
  }
  return result.pod!;
}
