import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Log } from '../core/log.ts';
import { loggableError } from '../kube/errors.ts';
import type { ReportAccess } from '../report/authorize-report.ts';
import { normalizeIp } from '../report/identify-caller.ts';
import { BodyBudget, BodyRefused, readBody } from '../report/read-body.ts';
import { refusalHeaders } from '../report/refusal-headers.ts';
import type { Route } from '../report/routes.ts';
import { gateCheckRequest } from './check-gate.ts';
import { CHECK_PATH } from './check-url.ts';
import { type CheckReportDeps, handleCheckReport } from './handle-check-report.ts';

export interface CheckRouteOptions {
  /** Signed runs (the `khrun` query) and what a report without one gets; checked before the body is read. */
  access: ReportAccess;
  /** Bodies larger than this are refused before they are read. */
  maxBodyBytes: number;
  /** Body bytes buffered at once across this route's requests, beyond each one's first freeBytes. */
  budget?: { maxBytes: number; freeBytes: number };
}

function send(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) {
  if (res.headersSent) return;
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text ? `${text}\n` : '');
}

/**
 * Kuberhealthy v3's report endpoint, `POST /check`, for HealthCheck runs: 405 for another method, 415
 * without a JSON content type, 400 without the kh-run-uuid header or with a URL khrun did not sign, 410 for
 * a signed run past its deadline, all before a body byte is read or an API request made; then the bounded
 * body and handleCheckReport. A report without a signed run is looked up by its UUID as v3 does, unless
 * the endpoint refuses unsigned reports.
 */
export function checkRoute(deps: CheckReportDeps & { log: Log }, opts: CheckRouteOptions): Route {
  const budget = new BodyBudget(
    opts.budget?.maxBytes ?? 32 * 1024 * 1024,
    opts.budget?.freeBytes ?? 8 * 1024,
  );
  return async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://report.invalid');
    if (url.pathname !== CHECK_PATH) return false;
    try {
      const header = req.headers['kh-run-uuid'];
      const access =
        opts.access.unsigned === 'header-and-ip'
          ? { ...opts.access, unsigned: 'header' as const }
          : opts.access;
      const gate = gateCheckRequest(
        {
          method: req.method ?? '',
          contentType: req.headers['content-type'],
          uuid: Array.isArray(header) ? header[0] : header,
          query: url.searchParams,
          sourceIp: normalizeIp(req.socket.remoteAddress),
          nowMs: deps.clock.nowMs(),
        },
        access,
      );
      if (!gate.ok) {
        if (gate.status === 400 || gate.status === 410)
          deps.log.warn('report refused', { status: gate.status, reason: gate.message, path: CHECK_PATH });
        // Refused before a body byte is read.
        send(res, gate.status, gate.message, refusalHeaders(req, budget.freeBytes));
        return true;
      }
      let body: string;
      try {
        body = await readBody(req, res, opts.maxBodyBytes, budget);
      } catch (error) {
        if (!(error instanceof BodyRefused)) throw error;
        const retry: Record<string, string> =
          error.retryAfterS === undefined ? {} : { 'retry-after': String(error.retryAfterS) };
        send(res, error.status, `report rejected: ${error.message}`, { connection: 'close', ...retry });
        return true;
      }
      const result = await handleCheckReport(deps, { caller: gate.caller, uuid: gate.uuid, body });
      send(res, result.status, result.message);
    } catch (error) {
      deps.log.error('report endpoint failed', { error: loggableError(error), path: CHECK_PATH });
      send(res, 500, 'internal error; retry');
    }
    return true;
  };
}
