import { open } from 'node:fs/promises';

/** The kubelet's limits for termination messages (pkg/kubelet/container). */
export const TERMINATION_MESSAGE_MAX_BYTES = 4096;
export const FALLBACK_LOG_MAX_LINES = 80;
export const FALLBACK_LOG_MAX_BYTES = 2048;

/** The last `lines` lines of text (a trailing newline does not count as an empty last line). Pure. */
export function lastLines(text: string, lines: number): string {
  if (lines <= 0) return '';
  let end = text.length;
  if (text.endsWith('\n')) end--;
  let start = end;
  for (let seen = 0; start > 0; ) {
    const nl = text.lastIndexOf('\n', start - 1);
    if (nl === -1) {
      start = 0;
      break;
    }
    if (++seen === lines) {
      start = nl + 1;
      break;
    }
    start = nl;
  }
  return text.slice(start);
}

/** The last maxBytes bytes of a buffer. Pure. */
export function lastBytes(buf: Buffer, maxBytes: number): Buffer {
  return buf.length <= maxBytes ? buf : buf.subarray(buf.length - maxBytes);
}

/** Reads at most maxBytes from the end of a file; empty when it does not exist. */
export async function readTail(path: string, maxBytes: number): Promise<Buffer> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, 'r');
    const { size } = await handle.stat();
    const length = Math.min(size, maxBytes);
    const buf = Buffer.alloc(length);
    await handle.read(buf, 0, length, size - length);
    return buf;
  } catch {
    return Buffer.alloc(0);
  } finally {
    await handle?.close();
  }
}

/**
 * The kubelet's termination message: the file the container wrote at terminationMessagePath (at most
 * 4096 bytes); when that is empty and the policy is FallbackToLogsOnError and the container failed, the
 * last 80 lines / 2048 bytes of its log.
 */
export async function terminationMessage(opts: {
  messageFile: string;
  logFile: string;
  policy: string | undefined;
  exitCode: number;
}): Promise<string | undefined> {
  const fromFile = (await readTail(opts.messageFile, TERMINATION_MESSAGE_MAX_BYTES)).toString('utf8');
  if (fromFile.length > 0) return fromFile;
  if (opts.policy !== 'FallbackToLogsOnError' || opts.exitCode === 0) return undefined;
  // Read more than the byte limit, so line counting starts from whole lines.
  const tail = (await readTail(opts.logFile, FALLBACK_LOG_MAX_BYTES * 4)).toString('utf8');
  const text = lastBytes(
    Buffer.from(lastLines(tail, FALLBACK_LOG_MAX_LINES)),
    FALLBACK_LOG_MAX_BYTES,
  ).toString('utf8');
  return text.length > 0 ? text : undefined;
}
