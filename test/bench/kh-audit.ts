import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** One API request as the API server logged it (its clock), for attributing requests to runs. */
export interface AuditRequest {
  atMs: number;
  user: string;
  verb: string;
  /** resource[/subresource], or `nonresource`. */
  resource: string;
  namespace: string | undefined;
  name: string | undefined;
  /** The answer's HTTP status (undefined for a watch, counted when it started). */
  code?: number;
}

interface AuditEvent {
  stage?: string;
  verb?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  requestReceivedTimestamp?: string;
  responseStatus?: { code?: number };
}

/**
 * Every request of the given users in the audit log, each counted once as audit.ts counts them (its
 * ResponseComplete, or ResponseStarted for a watch), with its namespace: the Kuberhealthy daemons run every
 * check in one process, so a run's requests are told apart by the namespace each check has to itself.
 * Streamed: the log of a whole benchmark run is large.
 */
export async function auditRequests(path: string, users: readonly string[]): Promise<AuditRequest[]> {
  const out: AuditRequest[] = [];
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (!users.some((u) => line.includes(u))) continue;
    let event: AuditEvent;
    try {
      event = JSON.parse(line) as AuditEvent;
    } catch {
      continue;
    }
    const user = event.user?.username;
    if (!user || !users.includes(user)) continue;
    if (event.verb === 'watch' ? event.stage !== 'ResponseStarted' : event.stage !== 'ResponseComplete')
      continue;
    const atMs = Date.parse(event.requestReceivedTimestamp ?? '');
    if (!Number.isFinite(atMs)) continue;
    const ref = event.objectRef;
    out.push({
      atMs,
      user,
      verb: event.verb ?? '',
      resource: [ref?.resource, ref?.subresource].filter(Boolean).join('/') || 'nonresource',
      namespace: ref?.namespace || undefined,
      name: ref?.name || undefined,
      ...(event.responseStatus?.code ? { code: event.responseStatus.code } : {}),
    });
  }
  return out.sort((a, b) => a.atMs - b.atMs);
}

/**
 * The API server's receipt of a request of `user` for `resource` in `namespace` with one of `verbs`, within
 * 3 s at or before seenMs (pure; requests sorted by time): the last such request, or the first with
 * `first`. Undefined when there is none.
 */
export function requestBefore(
  requests: readonly AuditRequest[],
  match: { user: string; namespace: string; resource: string; verbs: readonly string[] },
  seenMs: number,
  which: 'first' | 'last' = 'last',
): number | undefined {
  let found: number | undefined;
  for (const r of requests) {
    if (r.atMs > seenMs) break;
    if (r.atMs < seenMs - 3_000) continue;
    if (r.user !== match.user || r.namespace !== match.namespace || r.resource !== match.resource) continue;
    if (!match.verbs.includes(r.verb)) continue;
    if (which === 'first') return r.atMs;
    found = r.atMs;
  }
  return found;
}
