import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL, type KhCheck } from '../../lib/state/resources.ts';

const co = { group: KH_GROUP, version: KH_VERSION, plural: KHCHECK_PLURAL };

/**
 * Kuberhealthy v2 runs every khcheck of the cluster: the other sections' khchecks are taken out while it
 * runs and put back after (same name, labels, annotations and spec; their khstates are never touched).
 */
export async function setAsideKhchecks(kc: KubeConfig): Promise<{ restore(): Promise<void> }> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const { items } = (await untilServed(() => custom.listClusterCustomObject(co))) as { items: KhCheck[] };
  for (const c of items)
    await custom.deleteNamespacedCustomObject({
      ...co,
      namespace: c.metadata.namespace,
      name: c.metadata.name,
    });
  return {
    async restore() {
      for (const c of items) {
        const { name, namespace, labels, annotations } = c.metadata;
        await custom.createNamespacedCustomObject({
          ...co,
          namespace,
          body: {
            apiVersion: c.apiVersion,
            kind: c.kind,
            metadata: { name, namespace, labels, annotations },
            spec: c.spec,
          },
        });
      }
    },
  };
}

/** Retries while the API server answers 429 (a CRD's storage still initialising on a fresh cluster), up to 60 s. */
async function untilServed<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (let waitMs = 250; ; waitMs = Math.min(waitMs * 2, 2_000)) {
    try {
      return await call();
    } catch (error) {
      if ((error as { code?: number }).code !== 429 || Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }
}
