import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Log } from '../core/log.ts';
import { loggableError } from '../kube/errors.ts';
import { authorizeReport, type ReportAccess } from './authorize-report.ts';
import {
  DEFAULT_EVICT_AFTER_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_CONNECTIONS_PER_SOURCE,
  limitConnections,
} from './connection-limits.ts';
import { handleReport, type ReportDeps } from './handle-report.ts';
import { normalizeIp } from './identify-caller.ts';
import { BodyBudget, BodyRefused, readBody } from './read-body.ts';
import { refusalHeaders } from './refusal-headers.ts';
import { parseReportPath } from './report-token.ts';

export const REPORT_PATH = '/externalCheckStatus';
/**
 * The answer to a bodiless GET of a signed reporting URL this endpoint would refuse (421 Misdirected
 * Request): the run's report cannot land here.
 */
export const MISDIRECTED = 421;

export interface ReportServerOptions {
  host: string;
  port: number;
  /** Which URLs may report here (signed runs, v2-style unsigned ones); checked before the body is read. */
  access: ReportAccess;
  /** Open connections at most (default DEFAULT_MAX_CONNECTIONS); see connection-limits.ts for who gives way. */
  maxConnections?: number;
  /** Open connections one source address may hold (default DEFAULT_MAX_CONNECTIONS_PER_SOURCE). */
  maxConnectionsPerSource?: number;
  /** Unsigned reports one source address may have in flight (default DEFAULT_MAX_UNSIGNED_PER_SOURCE); beyond: 429. */
  maxUnsignedPerSource?: number;
  /** A connection that has not sent its request headers by then is closed (default 10 s, at most requestTimeoutMs). */
  headersTimeoutMs?: number;
  /** Body bytes buffered at once across requests (default DEFAULT_MAX_BUFFERED_BYTES); beyond: 503. */
  maxBufferedBytes?: number;
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
export { DEFAULT_MAX_CONNECTIONS } from './connection-limits.ts';
/**
 * Unsigned reports in flight from one source address: each costs pod LISTs (and a header-less one holds its
 * connection while it looks), and a checker pod sends one.
 */
export const DEFAULT_MAX_UNSIGNED_PER_SOURCE = 4;
/** Body bytes held at once across all requests, beyond each request's first FREE_BODY_BYTES. */
export const DEFAULT_MAX_BUFFERED_BYTES = 32 * 1024 * 1024;
/** Every request may buffer this much outside the budget: a report is a few hundred bytes. */
export const FREE_BODY_BYTES = 8 * 1024;

function send(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) {
  if (res.headersSent) return;
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(`${text}\n`);
}

/** A request that carries no body (a probe such as v2's WaitForKuberhealthy GET). */
function bodiless(req: IncomingMessage): boolean {
  return (
    (req.method === 'GET' || req.method === 'HEAD') &&
    Number(req.headers['content-length'] ?? 0) === 0 &&
    req.headers['transfer-encoding'] === undefined
  );
}

/** The path after REPORT_PATH, or undefined when the request is for another route. */
function reportRest(pathname: string): string | undefined {
  if (pathname === REPORT_PATH) return '';
  return pathname.startsWith(`${REPORT_PATH}/`) ? pathname.slice(REPORT_PATH.length) : undefined;
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
  const budget = new BodyBudget(opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES, FREE_BODY_BYTES);
  const requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
  // Node looks for requests past their timeout only every connectionsCheckingInterval (30 s by default),
  // so without this a slow sender would hold its connection up to 30 s longer than requestTimeoutMs.
  const headersTimeoutMs = Math.min(requestTimeoutMs, opts.headersTimeoutMs ?? 10_000);
  const sweepMs = Math.max(
    100,
    Math.min(1_000, Math.floor(Math.min(requestTimeoutMs, headersTimeoutMs) / 4)),
  );
  const maxUnsigned = opts.maxUnsignedPerSource ?? DEFAULT_MAX_UNSIGNED_PER_SOURCE;
  const unsignedInFlight = new Map<string, number>();
  const server: Server = createServer({ connectionsCheckingInterval: sweepMs }, async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://report.invalid');
      const rest = reportRest(url.pathname);
      if (rest === undefined) {
        if (opts.extraRoutes && (await opts.extraRoutes(req, res))) return;
        send(res, 404, `not found: checker pods report to ${REPORT_PATH}`);
        return;
      }
      const header = req.headers['kh-run-uuid'];
      const sourceIp = normalizeIp(req.socket.remoteAddress);
      const path = parseReportPath(rest);
      const authorized = authorizeReport(opts.access, path, {
        headerUuid: Array.isArray(header) ? header[0] : header,
        sourceIp,
        nowMs: deps.clock.nowMs(),
      });
      if (bodiless(req)) {
        // A signed URL this endpoint would refuse names a run it cannot take (another runner's key: this
        // address was the run's runner's, now another's): 421, so that an adopting runner's probe
        // (lib/run/endpoint-probe.ts) knows the pod's report can never land here. Any other GET, a client
        // waiting for its own endpoint, is answered 200 as v2 does.
        if (path.kind !== 'bare' && !authorized.ok) {
          send(res, MISDIRECTED, `report would be rejected here: ${authorized.reason}`);
          return;
        }
        send(res, 200, `khrun report endpoint: POST {"OK": true|false, "Errors": [...]} to KH_REPORTING_URL`);
        return;
      }
      if (!authorized.ok) {
        // Refused before a body byte is read and before any API request.
        deps.log.warn('report refused', { reason: authorized.reason });
        send(res, 400, `report rejected: ${authorized.reason}`, refusalHeaders(req, FREE_BODY_BYTES));
        return;
      }
      // Each unsigned report costs pod LISTs: one source gets a few at a time (a checker pod sends one).
      const source = sourceIp ?? '';
      if (authorized.caller.via === 'unsigned') {
        const inFlight = unsignedInFlight.get(source) ?? 0;
        if (inFlight >= maxUnsigned) {
          deps.log.warn('unsigned report refused: too many in flight from its source', { source, inFlight });
          send(
            res,
            429,
            `report rejected: ${inFlight} unsigned reports from ${source} are in flight; retry shortly`,
            { ...refusalHeaders(req, FREE_BODY_BYTES), 'retry-after': '1' },
          );
          return;
        }
        unsignedInFlight.set(source, inFlight + 1);
        res.once('close', () => {
          const left = (unsignedInFlight.get(source) ?? 1) - 1;
          if (left > 0) unsignedInFlight.set(source, left);
          else unsignedInFlight.delete(source);
        });
      }
      let body: string;
      try {
        body = await readBody(req, res, limit, budget);
      } catch (error) {
        if (!(error instanceof BodyRefused)) throw error;
        if (error.status === 503)
          deps.log.warn('report body refused: buffer budget full', { bytes: budget.usedBytes });
        const retry: Record<string, string> =
          error.retryAfterS === undefined ? {} : { 'retry-after': String(error.retryAfterS) };
        send(res, error.status, `report rejected: ${error.message}`, { connection: 'close', ...retry });
        return;
      }
      const result = await handleReport(deps, {
        method: req.method ?? 'POST',
        caller: authorized.caller,
        body,
      });
      send(res, result.status, result.message);
    } catch (error) {
      deps.log.error('report endpoint failed', { error: loggableError(error) });
      send(res, 500, 'internal error; retry');
    }
  });
  limitConnections(
    server,
    {
      maxConnections: opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      maxPerSource: opts.maxConnectionsPerSource ?? DEFAULT_MAX_CONNECTIONS_PER_SOURCE,
      evictAfterMs: DEFAULT_EVICT_AFTER_MS,
    },
    deps.log,
  );
  server.requestTimeout = requestTimeoutMs;
  server.headersTimeout = headersTimeoutMs;
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
