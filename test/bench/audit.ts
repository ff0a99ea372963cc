import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';

interface AuditEvent {
  stage?: string;
  verb?: string;
  user?: { username?: string };
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string };
  requestReceivedTimestamp?: string;
}

/** API requests as the API server saw them (its audit log), by user and time window. */
export interface RequestCount {
  total: number;
  byVerbResource: Record<string, number>;
  /** khstate writes by the loop that made them (user agent `khrun/<loop>`, lib/kube/kube-port.ts). */
  byLoop: Record<string, number>;
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
  const count: RequestCount = { total: 0, byVerbResource: {}, byLoop: {} };
  // Streamed: a full benchmark's log grows past what one string may hold.
  const input = createReadStream(auditLogPath, 'utf8');
  const opened = await new Promise<boolean>((resolve) => {
    input.once('open', () => resolve(true));
    input.once('error', () => resolve(false));
  });
  if (!opened) return count;
  for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
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
    const loop = /^khrun\/([a-z-]+)/.exec(event.userAgent ?? '')?.[1];
    if (loop) count.byLoop[loop] = (count.byLoop[loop] ?? 0) + 1;
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
      const lines = (await tail(auditLogPath, 4 << 20)).split('\n');
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

/** The last bytes of a file as text (empty when it does not exist yet). */
async function tail(path: string, bytes: number): Promise<string> {
  const file = await open(path, 'r').catch(() => undefined);
  if (!file) return '';
  try {
    const { size } = await file.stat();
    const start = Math.max(0, size - bytes);
    const buffer = Buffer.alloc(size - start);
    await file.read(buffer, 0, buffer.length, start);
    return buffer.toString('utf8');
  } finally {
    await file.close();
  }
}
