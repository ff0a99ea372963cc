import type { KubeClient } from '../kube/kube-client.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { KH_GROUP, KH_VERSION } from '../state/resources.ts';

const co = { group: KH_GROUP, version: KH_VERSION };

/** Lists a khrun custom resource in the scope: one cluster-wide list, or one list per namespace. */
export async function listInScope<T>(
  client: KubeClient,
  plural: string,
  scope: NamespaceScope,
  api: { group: string; version: string } = co,
): Promise<T[]> {
  // Through the client object: the tick's due times are judged by its API server clock, which these lists set.
  const custom = client.custom;
  if (scope === 'all')
    return ((await custom.listClusterCustomObject({ ...api, plural })) as { items: T[] }).items;
  const lists = await Promise.all(
    scope.namespaces.map(
      async (namespace) =>
        ((await custom.listNamespacedCustomObject({ ...api, plural, namespace })) as { items: T[] }).items,
    ),
  );
  return lists.flat();
}
