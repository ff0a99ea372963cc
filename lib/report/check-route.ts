import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Log } from '../core/log.ts';
import { loggableError } from '../kube/errors.ts';
import { authorizeReport, type ReportAccess } from './authorize-report.ts';
import { CHECK_PATH, checkTokenPath } from './check-url.ts';
import { type CheckReportDeps, handleCheckReport } from './handle-check-report.ts';
import { normalizeIp } from './identify-caller.ts';
import { BodyBudget, BodyRefused, readBody } from './read-body.ts';
import type { Route } from './routes.ts';

export interface CheckRouteOptions {
  /** Signed runs (the `khrun` query) and what a report without one gets; checked before the body is read. */
  access: ReportAccess;
  /** Bodies larger than this are refused before they are read. */
  maxBodyBytes: number;
  /** Body bytes buffered at once across this route's requests, beyond each one's first freeBytes. */
  budget?: { maxBytes: number; freeBytes: number };
}

function send(
  res: ServerResponse,
  status: number,
  text: string,
  close = false,
  extra: Record<string, string> = {},
) {
  if (res.headersSent) return;
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    ...(close ? { connection: 'close' } : {}),
    ...extra,
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
      if (req.method !== 'POST') {
        send(res, 405, 'method not allowed: checker pods POST their report to /check', true);
        return true;
      }
      if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
        send(res, 415, 'unsupported media type: send the report as Content-Type: application/json', true);
        return true;
      }
      const header = req.headers['kh-run-uuid'];
      const uuid = Array.isArray(header) ? header[0] : header;
      if (!uuid) {
        send(res, 400, 'report rejected: no kh-run-uuid header; send kh-run-uuid: $KH_RUN_UUID', true);
        return true;
      }
      const path = checkTokenPath(url.searchParams);
      const nowMs = deps.clock.nowMs();
      // The deadline is judged after the mac, so that a late report of a genuine run gets v3's 410.
      const judgedAt = path.kind === 'signed' ? Math.min(nowMs, path.run.deadlineMs) : nowMs;
      const access =
        opts.access.unsigned === 'header-and-ip'
          ? { ...opts.access, unsigned: 'header' as const }
          : opts.access;
      const authorized = authorizeReport(access, path, {
        headerUuid: uuid,
        sourceIp: normalizeIp(req.socket.remoteAddress),
        nowMs: judgedAt,
      });
      if (!authorized.ok) {
        deps.log.warn('report refused', { reason: authorized.reason, path: CHECK_PATH });
        send(res, 400, `report rejected: ${authorized.reason}`, true);
        return true;
      }
      if (path.kind === 'signed' && nowMs > path.run.deadlineMs) {
        deps.log.warn('report refused: past its run deadline', { run: path.run.uuid, path: CHECK_PATH });
        send(res, 410, `run ${uuid} is past its timeout`, true);
        return true;
      }
      let body: string;
      try {
        body = await readBody(req, res, opts.maxBodyBytes, budget);
      } catch (error) {
        if (!(error instanceof BodyRefused)) throw error;
        const retry: Record<string, string> =
          error.retryAfterS === undefined ? {} : { 'retry-after': String(error.retryAfterS) };
        send(res, error.status, `report rejected: ${error.message}`, true, retry);
        return true;
      }
      const result = await handleCheckReport(deps, { caller: authorized.caller, uuid, body });
      send(res, result.status, result.message);
    } catch (error) {
      deps.log.error('report endpoint failed', { error: loggableError(error), path: CHECK_PATH });
      send(res, 500, 'internal error; retry');
    }
    return true;
  };
}
