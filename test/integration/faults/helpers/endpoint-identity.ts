import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { inject } from 'vitest';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL } from '../../../../lib/state/resources.ts';
import { serviceAccountKubeConfig, writeKubeConfig } from '../../helpers/deploy.ts';
import type { AuditEvent } from './audit.ts';

/**
 * A report endpoint's own identity, so the API server's audit log can tell its requests from everyone
 * else's: a ServiceAccount of the test's namespace with a Role there holding what a runner needs (a
 * runner hosts an endpoint; `khrun serve` needs less), and a kubeconfig file with a TokenRequest token.
 */
export async function endpointIdentity(
  admin: KubeConfig,
  namespace: string,
  name: string,
): Promise<{ kubeconfigPath: string; username: string }> {
  await admin
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name },
      rules: [
        { apiGroups: [KH_GROUP], resources: ['khchecks'], verbs: ['get', 'list', 'watch'] },
        {
          apiGroups: [KH_GROUP],
          resources: ['khstates'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
        { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
  const kc = await serviceAccountKubeConfig(admin, namespace, name);
  return {
    kubeconfigPath: await writeKubeConfig(kc, `${namespace}-${name}`),
    username: `system:serviceaccount:${namespace}:${name}`,
  };
}

/**
 * Every request the API server received from `username` between fromMs and toMs (any namespace, cluster
 * scope too), once the audit log holds everything up to now: a marker request is made and the log is read
 * until it shows up (bounded: 15 s).
 */
export async function requestsBy(
  admin: KubeConfig,
  username: string,
  window: { fromMs: number; toMs: number },
): Promise<AuditEvent[]> {
  const marker = `audit-marker-${Date.now().toString(36)}`;
  await admin
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHSTATE_PLURAL,
      namespace: 'default',
      name: marker,
    })
    .catch(() => undefined);
  const path = join(inject('clusterDir'), 'audit.log');
  const deadline = Date.now() + 15_000;
  for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, 1_000)) {
    const text = await readFile(path, 'utf8');
    if (text.includes(marker)) {
      const needle = `"username":"${username}"`;
      return text
        .split('\n')
        .filter((line) => line.includes(needle))
        .map((line) => JSON.parse(line) as AuditEvent)
        .filter((e) => {
          const at = Date.parse(e.requestReceivedTimestamp);
          return at >= window.fromMs && at <= window.toMs;
        });
    }
    if (Date.now() > deadline) throw new Error(`the audit log never showed the marker request ${marker}`);
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

/** `verb resource` of each request, counted: what the figures in the fault table are made of. */
export function tally(events: AuditEvent[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of events) {
    const key = `${e.verb} ${e.objectRef?.resource ?? e.requestURI}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
