import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { JsonObject } from './field-path.ts';
import { CHECK_KINDS, type CheckKind } from './kinds.ts';
import type { ConvertKube } from './port.ts';

interface ListAnswer {
  items?: JsonObject[];
  metadata?: { continue?: string };
}

/** ConvertKube over the real API server: one request per call; lists follow `continue` to the end. */
export function convertKube(client: KubeClient): ConvertKube {
  const custom = client.custom;
  const coordinates = (kind: CheckKind) => ({
    group: CHECK_KINDS[kind].group,
    version: CHECK_KINDS[kind].version,
    plural: CHECK_KINDS[kind].plural,
  });
  return {
    async get(kind, namespace, name) {
      try {
        return (await custom.getNamespacedCustomObject({
          ...coordinates(kind),
          namespace,
          name,
        })) as JsonObject;
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },
    async list(kind, namespace) {
      const items: JsonObject[] = [];
      let token: string | undefined;
      do {
        const page = (
          namespace === undefined
            ? await custom.listClusterCustomObject({ ...coordinates(kind), limit: 500, _continue: token })
            : await custom.listNamespacedCustomObject({
                ...coordinates(kind),
                namespace,
                limit: 500,
                _continue: token,
              })
        ) as ListAnswer;
        // A list answer's items carry no apiVersion and kind; the converter reads them.
        for (const item of page.items ?? [])
          items.push({
            apiVersion: `${CHECK_KINDS[kind].group}/${CHECK_KINDS[kind].version}`,
            kind: CHECK_KINDS[kind].kind,
            ...item,
          });
        token = page.metadata?.continue || undefined;
      } while (token);
      return items;
    },
    async create(kind, resource, dryRun) {
      const namespace = (resource.metadata as { namespace: string }).namespace;
      return (await custom.createNamespacedCustomObject({
        ...coordinates(kind),
        namespace,
        body: resource,
        dryRun: dryRun ? 'All' : undefined,
        fieldManager: 'khrun-convert',
      })) as JsonObject;
    },
  };
}
