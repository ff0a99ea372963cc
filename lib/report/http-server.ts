import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Log } from '../core/log.ts';
import { loggableError } from '../kube/errors.ts';
import { handleReport, type ReportDeps } from './handle-report.ts';
import { normalizeIp } from './identify-caller.ts';

export const REPORT_PATH = '/externalCheckStatus';

export interface ReportServerOptions {
  host: string;
  port: number;
  /** Bodies larger than this are refused before they are read (default 256 KiB). */
  maxBodyBytes?: number;
  /** A request not answered within this is cut off, slow senders included (default 30 s). */
  requestTimeoutMs?: number;
  /** Extra routes (status pages, health) served by the same listener. */
  extraRoutes?: (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;
}

export interface RunningServer {
  url: string;
  port: number;
  /**
   * Stops listening. Without graceMs every connection is cut at once; with it, idle keep-alive connections
   * are closed, requests in flight get up to graceMs to finish, and whatever is left is then cut.
   */
  close(opts?: { graceMs?: number }): Promise<void>;
}

export const DEFAULT_MAX_BODY_BYTES = 256 * 1024;

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      reject(new BodyTooLarge(`body of ${declared} bytes is over the ${limit}-byte limit`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLarge(`body is over the ${limit}-byte limit`));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

function send(res: ServerResponse, status: number, text: string) {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`${text}\n`);
}

/**
 * The report endpoint over plain HTTP, as v2 serves it. Kept framework-free: the whole surface is one path
 * plus whatever extraRoutes adds; limits protect it from huge or slow senders.
 */
export async function startReportServer(
  deps: ReportDeps & { log: Log },
  opts: ReportServerOptions,
): Promise<RunningServer> {
  const limit = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
  // Node looks for requests past their timeout only every connectionsCheckingInterval (30 s by default),
  // so without this a slow sender would hold its connection up to 30 s longer than requestTimeoutMs.
  const sweepMs = Math.max(100, Math.min(1_000, Math.floor(requestTimeoutMs / 4)));
  const server: Server = createServer({ connectionsCheckingInterval: sweepMs }, async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://report.invalid');
      if (url.pathname !== REPORT_PATH) {
        if (opts.extraRoutes && (await opts.extraRoutes(req, res))) return;
        send(res, 404, `not found: checker pods report to ${REPORT_PATH}`);
        return;
      }
      let body: string;
      try {
        body = await readBody(req, limit);
      } catch (error) {
        if (error instanceof BodyTooLarge) {
          res.setHeader('connection', 'close');
          send(res, 400, `report rejected: ${error.message}`);
          return;
        }
        throw error;
      }
      const header = req.headers['kh-run-uuid'];
      const result = await handleReport(deps, {
        method: req.method ?? 'POST',
        headerUuid: Array.isArray(header) ? header[0] : header,
        sourceIp: normalizeIp(req.socket.remoteAddress),
        body,
      });
      send(res, result.status, result.message);
    } catch (error) {
      deps.log.error('report endpoint failed', { error: loggableError(error) });
      send(res, 500, 'internal error; retry');
    }
  });
  server.requestTimeout = requestTimeoutMs;
  server.headersTimeout = Math.min(server.requestTimeout, 10_000);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${host}:${port}${REPORT_PATH}`,
    port,
    close: (closeOpts) =>
      new Promise<void>((resolve) => {
        const graceMs = closeOpts?.graceMs ?? 0;
        const timer =
          graceMs > 0 ? setTimeout(() => server.closeAllConnections(), graceMs).unref() : undefined;
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        if (graceMs > 0) server.closeIdleConnections();
        else server.closeAllConnections();
      }),
  };
}
