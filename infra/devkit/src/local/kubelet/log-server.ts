import { execFile } from 'node:child_process';
import { createReadStream, watch } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { lastLines } from './logs.ts';

const run = promisify(execFile);

/** Where a container's log is, and how to know it is still being written. */
export type LogLookup =
  | { kind: 'found'; file: string; untilNotRunning: () => Promise<void> }
  | { kind: 'error'; statusCode: number; message: string };

export interface LogQuery {
  tailLines?: number;
  limitBytes?: number;
  follow: boolean;
  previous: boolean;
}

/** Parses the kubelet's /containerLogs query string. Pure. */
export function parseLogQuery(params: URLSearchParams): LogQuery {
  const int = (name: string) => {
    const v = params.get(name);
    const n = v === null ? Number.NaN : Number(v);
    return Number.isInteger(n) && n >= 0 ? n : undefined;
  };
  return {
    tailLines: int('tailLines'),
    limitBytes: int('limitBytes'),
    follow: params.get('follow') === 'true',
    previous: params.get('previous') === 'true',
  };
}

/** A self-signed serving certificate for the host address (the API server does not verify kubelets by default). */
export async function selfSignedCert(
  dir: string,
  hostIp: string,
  commonName: string,
): Promise<{ key: Buffer; cert: Buffer }> {
  await mkdir(dir, { recursive: true });
  const keyFile = join(dir, 'kubelet.key');
  const certFile = join(dir, 'kubelet.crt');
  await run('openssl', [
    'req',
    '-x509',
    '-nodes',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-keyout',
    keyFile,
    '-out',
    certFile,
    '-days',
    '30',
    '-subj',
    `/CN=${commonName}`,
    '-addext',
    `subjectAltName=IP:${hostIp}`,
  ]);
  return { key: await readFile(keyFile), cert: await readFile(certFile) };
}

/**
 * The kubelet's log endpoint, `GET /containerLogs/<namespace>/<pod>/<container>`, over HTTPS, which the
 * API server calls for `kubectl logs` / readNamespacedPodLog. Supports tailLines, limitBytes, previous and
 * follow (until the container's process exits); timestamps and sinceSeconds are ignored. No
 * authentication: it listens on the host's pod-network address only.
 */
export async function startLogServer(opts: {
  host: string;
  tls: { key: Buffer; cert: Buffer };
  lookup: (namespace: string, pod: string, container: string, previous: boolean) => LogLookup;
}): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const closing = new AbortController();
  const server: Server = createServer(opts.tls, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://kubelet');
    if (url.pathname === '/healthz') return void res.end('ok');
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (req.method !== 'GET' || parts[0] !== 'containerLogs' || parts.length !== 4) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const query = parseLogQuery(url.searchParams);
    const found = opts.lookup(parts[1]!, parts[2]!, parts[3]!, query.previous);
    if (found.kind === 'error') {
      res.writeHead(found.statusCode, { 'content-type': 'text/plain' }).end(found.message);
      return;
    }
    serveLog(res, found, query, closing.signal).catch(() => res.destroy());
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, opts.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        closing.abort();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

async function serveLog(
  res: ServerResponse,
  found: Extract<LogLookup, { kind: 'found' }>,
  query: LogQuery,
  closing: AbortSignal,
): Promise<void> {
  const content = await readFile(found.file).catch(() => Buffer.alloc(0));
  let body =
    query.tailLines !== undefined
      ? Buffer.from(lastLines(content.toString('utf8'), query.tailLines))
      : content;
  let budget = query.limitBytes ?? Number.POSITIVE_INFINITY;
  if (body.length > budget) body = body.subarray(0, budget);
  budget -= body.length;
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.write(body);
  if (!query.follow || budget <= 0) return void res.end();

  // Follow: stream what is appended (inotify, no polling) until the process exits or the client leaves.
  let offset = content.length;
  const stop = new AbortController();
  const signal = AbortSignal.any([stop.signal, closing]);
  res.once('close', () => stop.abort());
  const pump = async () => {
    const { size } = await stat(found.file);
    if (size <= offset) return;
    const end = Math.min(size, offset + budget) - 1;
    for await (const chunk of createReadStream(found.file, { start: offset, end })) {
      res.write(chunk);
      budget -= (chunk as Buffer).length;
    }
    offset = end + 1;
    if (budget <= 0) stop.abort();
  };
  let pumping = Promise.resolve();
  const watcher = watch(found.file, { signal }, () => {
    pumping = pumping.then(pump).catch(() => stop.abort());
  });
  watcher.on('error', () => stop.abort());
  await Promise.race([
    found.untilNotRunning(),
    new Promise((r) => signal.addEventListener('abort', r, { once: true })),
  ]);
  stop.abort();
  await pumping;
  if (!closing.aborted) await pump().catch(() => undefined);
  res.end();
}
