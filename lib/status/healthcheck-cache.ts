import { HC_GROUP, HC_PLURAL, HC_VERSION, type HealthCheck } from '../healthcheck/resources.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { kubeListWatchTransport } from '../kube/list-watch-transport.ts';
import { missingCrdTransport } from '../kube/missing-crd-transport.ts';
import { type ObjectCache, type StateCacheOptions, startObjectCache } from './state-cache.ts';

const healthChecksPath = (namespace?: string) =>
  namespace
    ? `/apis/${HC_GROUP}/${HC_VERSION}/namespaces/${namespace}/${HC_PLURAL}`
    : `/apis/${HC_GROUP}/${HC_VERSION}/${HC_PLURAL}`;

/** How often a cache looks again for v3's CRD where it was not installed. */
export const CRD_RECHECK_MS = 60_000;

/**
 * The HealthChecks a status server lists beside the khstates: their own list-and-watch per scope (the
 * same scopes as the khstate cache), since a HealthCheck keeps its result in its own status. Without v3's
 * CRD the cache is ready and empty, and picks the CRD up within recheckMs of its installation.
 */
export function startHealthCheckCache(
  opts: StateCacheOptions & { recheckMs?: number },
): ObjectCache<HealthCheck> {
  const transport = missingCrdTransport(
    kubeListWatchTransport<HealthCheck>(opts.client),
    opts.recheckMs ?? CRD_RECHECK_MS,
  );
  return startObjectCache<HealthCheck>(opts, { pathOf: healthChecksPath, noun: 'HealthCheck', transport });
}

/**
 * One list of the HealthChecks, for a short-lived process (the CLI, a Lambda). A cluster without v3's CRD
 * has none: its 404 is an empty list, so khrun keeps listing khchecks where HealthChecks were never installed.
 */
export async function listHealthChecks(
  client: KubeClient,
  namespaces?: readonly string[],
): Promise<HealthCheck[]> {
  const custom = client.custom;
  const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
  try {
    const lists = namespaces?.length
      ? await Promise.all(
          [...new Set(namespaces)].map((namespace) =>
            custom.listNamespacedCustomObject({ ...co, namespace }),
          ),
        )
      : [await custom.listClusterCustomObject(co)];
    return lists.flatMap((list) => (list as { items: HealthCheck[] }).items);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}
