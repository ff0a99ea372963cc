import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { CHECK_PATH } from '../healthcheck/check-url.ts';
import { loggableError } from '../kube/errors.ts';
import { kubePort } from '../kube/kube-port.ts';
import { authorizeReport } from '../report/authorize-report.ts';
import { handleReport } from '../report/handle-report.ts';
import { DEFAULT_MAX_BODY_BYTES, REPORT_PATH } from '../report/http-server.ts';
import { normalizeIp } from '../report/identify-caller.ts';
import { kubeCallerLookup } from '../report/kube-lookup.ts';
import { parseReportPath } from '../report/report-token.ts';
import { checkReportFromUrlEvent } from './check-event.ts';
import { ANSWER_MARGIN_MS, type ReportEventDeps } from './report-event-deps.ts';

const text = (statusCode: number, body: string): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
  body: `${body}\n`,
});

/**
 * A Lambda function URL request (payload 2.0) through the same report protocol as the HTTP server
 * (`khrun serve`): v2's paths here, v3's `POST /check` in check-event.ts; same body limit, same status
 * codes. The URL and headers are judged first: a refused request is answered at once, without an API
 * request, so it holds the function for no longer than that.
 */
export async function reportFromUrlEvent(
  event: APIGatewayProxyEventV2,
  deps: ReportEventDeps,
): Promise<APIGatewayProxyStructuredResultV2> {
  const path = event.rawPath ?? event.requestContext?.http?.path ?? '/';
  // Kuberhealthy v3's path, for HealthCheck runs (their checker pods' client takes no other).
  if (path === CHECK_PATH) return checkReportFromUrlEvent(event, deps);
  const rest =
    path === REPORT_PATH
      ? ''
      : path.startsWith(`${REPORT_PATH}/`)
        ? path.slice(REPORT_PATH.length)
        : undefined;
  if (rest === undefined)
    return text(404, `not found: checker pods report to ${REPORT_PATH} (HealthChecks' to ${CHECK_PATH})`);
  const method = event.requestContext?.http?.method ?? 'POST';
  if ((method === 'GET' || method === 'HEAD') && !event.body) {
    return text(200, 'khrun report endpoint: POST {"OK": true|false, "Errors": [...]} to KH_REPORTING_URL');
  }
  // The API server's time (warm: from earlier responses; cold: the local clock, synchronised by AWS).
  const clock = deps.client.clock;
  const headers = Object.fromEntries(
    Object.entries(event.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
  );
  const authorized = authorizeReport(
    { key: deps.reportKey, unsigned: deps.unsigned, scope: deps.scope },
    parseReportPath(rest),
    {
      headerUuid: headers['kh-run-uuid'],
      sourceIp: normalizeIp(event.requestContext?.http?.sourceIp),
      nowMs: clock.nowMs(),
    },
  );
  if (!authorized.ok) {
    deps.log.warn('report refused', { reason: authorized.reason });
    return text(400, `report rejected: ${authorized.reason}`);
  }
  const body = event.body
    ? event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : event.body
    : '';
  if (Buffer.byteLength(body) > DEFAULT_MAX_BODY_BYTES) {
    return text(400, `report rejected: body is over the ${DEFAULT_MAX_BODY_BYTES}-byte limit`);
  }
  const kube = kubePort(deps.client);
  try {
    const result = await handleReport(
      {
        // Header lookups only: with no source address, a UUID that names no pod is answered at once.
        lookup: deps.lookup ?? kubeCallerLookup(deps.client, deps.scope, { ipLookupWaitMs: 0 }),
        state: { read: kube.readState, replace: kube.replaceState },
        clock,
        log: deps.log,
        server: deps.server,
        ...(deps.remainingMs ? { maxHoldMs: Math.max(0, deps.remainingMs() - ANSWER_MARGIN_MS) } : {}),
      },
      { method, caller: authorized.caller, body },
    );
    return text(result.status, result.message);
  } catch (error) {
    deps.log.error('report endpoint failed', { error: loggableError(error) });
    return text(500, 'internal error; retry');
  }
}
