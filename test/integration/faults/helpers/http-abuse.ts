import { type Agent, request } from 'node:http';

export interface Answer {
  status: number;
  text: string;
  ms: number;
}

/**
 * One POST (or other method) with a body and optional kh-run-uuid header: through fetch, or through `agent`
 * (node:http), whose maxSockets bounds the connections the caller holds to the server.
 */
export async function post(
  url: string,
  body: string,
  opts: { uuid?: string; method?: string; headers?: Record<string, string>; agent?: Agent } = {},
): Promise<Answer> {
  const started = performance.now();
  const headers = {
    'content-type': 'application/json',
    ...(opts.uuid !== undefined ? { 'kh-run-uuid': opts.uuid } : {}),
    ...opts.headers,
  };
  if (opts.agent) {
    const { agent } = opts;
    return new Promise<Answer>((resolve, reject) => {
      const req = request(url, { method: opts.method ?? 'POST', headers, agent }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, ms: performance.now() - started }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }
  const res = await fetch(url, { method: opts.method ?? 'POST', headers, body });
  const text = await res.text();
  return { status: res.status, text, ms: performance.now() - started };
}

/** Runs tasks with at most `concurrency` in flight; bounded by the task count. */
export async function pool<T>(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

export interface HugeResult {
  status: number | undefined;
  text: string;
  /** Body bytes the client had handed to the socket when the answer came (or the connection ended). */
  sentBytes: number;
  ms: number;
  /** How the exchange ended: an answer, or the server cutting the connection first. */
  ended: 'answered' | 'reset';
}

/**
 * Streams a body of totalBytes (with a Content-Length, or chunked without one) and stops sending as soon
 * as the server answers or cuts the connection: how much did the server let in before refusing? With
 * bodyBytes, only that much of the declared body is sent, and the answer awaited.
 */
export function sendHuge(
  url: string,
  totalBytes: number,
  declareLength: boolean,
  opts: { bodyBytes?: number } = {},
): Promise<HugeResult> {
  const bodyBytes = opts.bodyBytes ?? totalBytes;
  const started = performance.now();
  const chunk = Buffer.alloc(64 * 1024, 'a');
  chunk.write('{"OK":true,"Errors":["');
  return new Promise((resolve) => {
    let sent = 0;
    let done = false;
    const finish = (r: Omit<HugeResult, 'sentBytes' | 'ms'>) => {
      if (done) return;
      done = true;
      req.destroy();
      resolve({ ...r, sentBytes: sent, ms: performance.now() - started });
    };
    const req = request(url, {
      method: 'POST',
      headers: declareLength
        ? { 'content-type': 'application/json', 'content-length': String(totalBytes) }
        : { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.on('end', () => finish({ status: res.statusCode, text, ended: 'answered' }));
      res.on('error', () => finish({ status: res.statusCode, text, ended: 'answered' }));
    });
    req.on('error', () => finish({ status: undefined, text: '', ended: 'reset' }));
    const pump = () => {
      while (!done && sent < bodyBytes) {
        const piece = chunk.subarray(0, Math.min(chunk.length, bodyBytes - sent));
        sent += piece.length;
        if (!req.write(piece)) {
          req.once('drain', pump);
          return;
        }
      }
      // Headers only: leave the body unsent and wait for the answer.
      if (!done && bodyBytes === totalBytes) req.end();
    };
    req.flushHeaders();
    pump();
  });
}

/**
 * A slow sender: the headers, then the body one byte every intervalMs, until the server answers or cuts
 * the connection, or maxMs passes (then it gives up itself, and says so).
 */
export function dribble(
  url: string,
  opts: { intervalMs: number; maxMs: number },
): Promise<{ ms: number; ended: 'answered' | 'cut' | 'gave up'; status?: number }> {
  const body = '{"OK":true,"Errors":[]}'.padEnd(4096, ' ');
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    let i = 0;
    const finish = (ended: 'answered' | 'cut' | 'gave up', status?: number) => {
      if (done) return;
      done = true;
      clearInterval(timer);
      clearTimeout(limit);
      req.destroy();
      resolve({ ms: performance.now() - started, ended, status });
    };
    const req = request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
    });
    req.on('response', (res) => {
      res.resume();
      finish('answered', res.statusCode);
    });
    req.on('error', () => finish('cut'));
    req.on('close', () => finish('cut'));
    req.flushHeaders();
    const timer = setInterval(() => {
      if (i < body.length) req.write(body[i++] ?? ' ');
    }, opts.intervalMs);
    const limit = setTimeout(() => finish('gave up'), opts.maxMs);
  });
}
