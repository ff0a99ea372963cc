import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  type KubeConfig,
  loadAllYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { isAlreadyExists } from '../../../../lib/kube/errors.ts';
import { waitForSet } from '../../../../lib/kube/list-watch.ts';

/** Creates (or replaces) every CRD in dir and waits until each is Established. */
export async function installCrds(kc: KubeConfig, dir: string, signal?: AbortSignal): Promise<string[]> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const names: string[] = [];
  for (const file of (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    for (const doc of loadAllYaml(await readFile(join(dir, file), 'utf8')) as V1CustomResourceDefinition[]) {
      if (doc?.kind !== 'CustomResourceDefinition') continue;
      const name = doc.metadata?.name ?? '';
      try {
        await api.createCustomResourceDefinition({ body: doc });
      } catch (error) {
        if (!isAlreadyExists(error)) throw error;
        const current = await api.readCustomResourceDefinition({ name });
        await api.replaceCustomResourceDefinition({
          name,
          body: { ...doc, metadata: { ...doc.metadata, resourceVersion: current.metadata?.resourceVersion } },
        });
      }
      names.push(name);
    }
  }
  for (const name of names) {
    await waitForSet<V1CustomResourceDefinition, true>({
      kc,
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      fieldSelector: `metadata.name=${name}`,
      timeoutMs: 30_000,
      description: `CRD ${name} to be Established`,
      signal,
      decide: (items) =>
        [...items.values()].some((crd) =>
          crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'),
        )
          ? true
          : undefined,
    });
  }
  return names;
}
