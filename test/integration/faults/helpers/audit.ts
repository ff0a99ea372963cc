import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL } from '../../../../lib/state/resources.ts';

/** One request as the API server's audit log records it (metadata level). */
export interface AuditEvent {
  verb: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  /** When the request arrived (RFC 3339, microseconds); a request is part of the process that was up then. */
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  requestURI: string;
  /** ResponseComplete, or for a watch also ResponseStarted (RequestReceived is not logged). */
  stage?: string;
  /** The request's User-Agent header as sent: khrun's khstate writes say `khrun/<writer>`. */
  userAgent?: string;
  user?: { username?: string };
}

/**
 * The shared cluster's audit events for one namespace, once the batch writer has flushed everything up to
 * now: a marker request is made and the log is read until it shows up (bounded: 15 s).
 */
export async function auditEvents(kc: KubeConfig, namespace: string): Promise<AuditEvent[]> {
  const marker = `audit-marker-${Date.now().toString(36)}`;
  await kc
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({
      group: KH_GROUP,
      version: KH_VERSION,
      plural: KHSTATE_PLURAL,
      namespace,
      name: marker,
    })
    .catch(() => undefined);
  const path = join(inject('clusterDir'), 'audit.log');
  const deadline = Date.now() + 15_000;
  for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, 1_000)) {
    const text = await readFile(path, 'utf8');
    if (text.includes(marker)) {
      return text
        .split('\n')
        .filter((line) => line.includes(`"namespace":"${namespace}"`))
        .map((line) => JSON.parse(line) as AuditEvent);
    }
    if (Date.now() > deadline) throw new Error(`the audit log never showed the marker request ${marker}`);
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}
