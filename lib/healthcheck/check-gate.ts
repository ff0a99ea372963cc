import { authorizeReport, type ReportAccess, type ReportCaller } from '../report/authorize-report.ts';
import { checkTokenPath } from './check-url.ts';

export type CheckGate =
  | { ok: true; caller: ReportCaller; uuid: string }
  | { ok: false; status: 400 | 405 | 410 | 415; message: string };

/**
 * Kuberhealthy v3's `POST /check` judged from the request line and headers alone, before a body byte is read
 * or an API request made: 405 for another method, 415 without a JSON content type, 400 without the
 * kh-run-uuid header or with a URL khrun did not sign, 410 for a signed run past its deadline. The run's
 * token rides in the query (v3's client keeps the query string). One gate for `khrun serve`/`khrun run`'s
 * route (check-route.ts) and the report Lambda's (lib/aws/check-event.ts), so both answer alike. Pure.
 */
export function gateCheckRequest(
  req: {
    method: string;
    contentType: string | undefined;
    uuid: string | undefined;
    query: URLSearchParams;
    sourceIp: string | undefined;
    nowMs: number;
  },
  access: ReportAccess,
): CheckGate {
  if (req.method !== 'POST')
    return {
      ok: false,
      status: 405,
      message: 'method not allowed: checker pods POST their report to /check',
    };
  if (!(req.contentType ?? '').startsWith('application/json'))
    return {
      ok: false,
      status: 415,
      message: 'unsupported media type: send the report as Content-Type: application/json',
    };
  const uuid = req.uuid;
  if (!uuid)
    return {
      ok: false,
      status: 400,
      message: 'report rejected: no kh-run-uuid header; send kh-run-uuid: $KH_RUN_UUID',
    };
  const path = checkTokenPath(req.query);
  // The deadline is judged after the mac, so that a late report of a genuine run gets v3's 410.
  const judgedAt = path.kind === 'signed' ? Math.min(req.nowMs, path.run.deadlineMs) : req.nowMs;
  const authorized = authorizeReport(access, path, {
    headerUuid: uuid,
    sourceIp: req.sourceIp,
    nowMs: judgedAt,
  });
  if (!authorized.ok) return { ok: false, status: 400, message: `report rejected: ${authorized.reason}` };
  if (path.kind === 'signed' && req.nowMs > path.run.deadlineMs)
    return { ok: false, status: 410, message: `run ${uuid} is past its timeout` };
  return { ok: true, caller: authorized.caller, uuid };
}
