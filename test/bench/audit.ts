import { readFile } from 'node:fs/promises';

interface AuditEvent {
  stage?: string;
  verb?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string };
  requestReceivedTimestamp?: string;
}

/** API requests as the API server saw them (its audit log), by user and time window. */
export interface RequestCount {
  total: number;
  byVerbResource: Record<string, number>;
  /** When the first counted request reached the server (epoch ms, microsecond source truncated). */
  firstAtMs?: number;
}

/**
 * Counts requests in the audit log made by username between fromMs and toMs. Each request is counted once
 * (at its ResponseComplete stage, or ResponseStarted for long-running watches); watch events are not
 * requests and never appear in the log.
 */
export async function countRequests(
  auditLogPath: string,
  username: string,
  fromMs: number,
  toMs: number,
): Promise<RequestCount> {
  const text = await readFile(auditLogPath, 'utf8').catch(() => '');
  const count: RequestCount = { total: 0, byVerbResource: {} };
  for (const line of text.split('\n')) {
    if (!line.includes(username)) continue;
    let event: AuditEvent;
    try {
      event = JSON.parse(line) as AuditEvent;
    } catch {
      continue;
    }
    if (event.user?.username !== username) continue;
    const isWatch = event.verb === 'watch';
    if (isWatch ? event.stage !== 'ResponseStarted' : event.stage !== 'ResponseComplete') continue;
    const at = Date.parse(event.requestReceivedTimestamp ?? '');
    if (!(at >= fromMs && at <= toMs)) continue;
    const resource =
      [event.objectRef?.resource, event.objectRef?.subresource].filter(Boolean).join('/') || 'nonresource';
    const key = `${event.verb} ${resource}`;
    count.byVerbResource[key] = (count.byVerbResource[key] ?? 0) + 1;
    count.total++;
    if (count.firstAtMs === undefined || at < count.firstAtMs) count.firstAtMs = at;
  }
  return count;
}

/**
 * The API server writes its audit log in batches (up to 1 s late): waits, with backoff and a deadline,
 * until an entry of username at or after sinceMs is in the file.
 */
export async function waitForAuditFlush(
  auditLogPath: string,
  username: string,
  sinceMs: number,
  timeoutMs = 10_000,
) {
  const { retryWithBackoff } = await import('../../lib/core/backoff.ts');
  await retryWithBackoff(
    'the audit log to catch up',
    async () => {
      const text = await readFile(auditLogPath, 'utf8').catch(() => '');
      const lines = text.split('\n');
      for (let i = lines.length - 1; i >= 0 && i > lines.length - 2000; i--) {
        const line = lines[i] ?? '';
        if (!line.includes(username)) continue;
        const at = Date.parse((/"requestReceivedTimestamp":"([^"]+)"/.exec(line) ?? [])[1] ?? '');
        if (at >= sinceMs - 50) return true;
      }
      return undefined;
    },
    { initialMs: 100, maxMs: 500, deadlineEpochMs: Date.now() + timeoutMs },
  );
}
