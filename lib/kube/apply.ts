import { readFile } from 'node:fs/promises';
import {
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
} from '@kubernetes/client-node';
import { isAlreadyExists } from './errors.ts';

/** Creates each object, or replaces it when it exists: `kubectl apply` for files we own. */
export async function applyObjects(kc: KubeConfig, objects: KubernetesObject[]): Promise<KubernetesObject[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const applied: KubernetesObject[] = [];
  for (const obj of objects) {
    try {
      applied.push(await api.create(obj));
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      const current = await api.read({
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        metadata: obj.metadata,
      } as never);
      applied.push(
        await api.replace({
          ...obj,
          metadata: { ...obj.metadata, resourceVersion: current.metadata?.resourceVersion },
        }),
      );
    }
  }
  return applied;
}

export async function loadManifests(paths: string[]): Promise<KubernetesObject[]> {
  const docs: KubernetesObject[] = [];
  for (const path of paths) {
    for (const doc of loadAllYaml(await readFile(path, 'utf8')) as KubernetesObject[])
      if (doc?.kind) docs.push(doc);
  }
  return docs;
}
