import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The bytes a report server holds in request bodies at once, across all requests. Each request's first
 * `freeBytes` are not counted (a report is a few hundred bytes: genuine reports get in however full the
 * budget is; their total is bounded by the connection cap); whatever a body holds beyond that is taken
 * from `maxBytes` before it is buffered, and given back when the request ends.
 */
export class BodyBudget {
  private used = 0;
  constructor(
    readonly maxBytes: number,
    readonly freeBytes: number,
  ) {}

  get usedBytes(): number {
    return this.used;
  }

  /** Takes bytes if they fit; false (nothing taken) when they do not. */
  take(bytes: number): boolean {
    if (bytes <= 0) return true;
    if (this.used + bytes > this.maxBytes) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

/** A body refused before (or while) it was read; `status` and `retryAfterS` say what the client is told. */
export class BodyRefused extends Error {
  constructor(
    message: string,
    readonly status: 400 | 503,
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = 'BodyRefused';
  }
}

const busy = (budget: BodyBudget) =>
  new BodyRefused(
    `the server holds ${budget.maxBytes} bytes of request bodies already; retry shortly`,
    503,
    1,
  );

/**
 * Reads a request body of at most `limit` bytes within the budget. A declared Content-Length is judged and
 * reserved before a byte is read; a chunked body reserves as it arrives. Rejects with BodyRefused (400 over
 * the limit, 503 over the budget) without buffering beyond either. The budget is given back when the
 * response is done or the connection closes, however the exchange ends.
 */
export function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
  budget: BodyBudget,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let held = 0;
    res.once('close', () => budget.give(held));
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      reject(new BodyRefused(`body of ${declared} bytes is over the ${limit}-byte limit`, 400));
      return;
    }
    const counted = (bytes: number) => Math.max(0, bytes - budget.freeBytes);
    if (!budget.take(counted(declared))) {
      reject(busy(budget));
      return;
    }
    held = counted(declared);
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (error: BodyRefused) => {
      req.removeAllListeners('data');
      req.resume();
      reject(error);
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return stop(new BodyRefused(`body is over the ${limit}-byte limit`, 400));
      const more = counted(size) - held;
      if (more > 0) {
        if (!budget.take(more)) return stop(busy(budget));
        held += more;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}
