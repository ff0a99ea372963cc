import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { type CheckGate, gateCheckRequest } from '../healthcheck/check-gate.ts';
import { CHECK_PATH } from '../healthcheck/check-url.ts';
import { handleCheckReport } from '../healthcheck/handle-check-report.ts';
import { healthCheckApi } from '../healthcheck/healthcheck-api.ts';
import { healthCheckPort } from '../healthcheck/healthcheck-port.ts';
import { findRunByUuid } from '../healthcheck/report-route.ts';
import { loggableError } from '../kube/errors.ts';
import type { ReportAccess } from '../report/authorize-report.ts';
import { DEFAULT_MAX_BODY_BYTES } from '../report/http-server.ts';
import { ANSWER_MARGIN_MS, type ReportEventDeps } from './report-event-deps.ts';

const text = (statusCode: number, body: string): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
  body: `${body}\n`,
});

/**
 * Kuberhealthy v3's `POST /check` judged from the function URL request alone: the same gate, codes and words
 * as `khrun serve`'s route (lib/healthcheck/check-gate.ts); a function URL carries no source address to judge.
 */
export function gateCheckEvent(
  req: { method: string; headers: Record<string, string | undefined>; query: string; nowMs: number },
  access: ReportAccess,
): CheckGate {
  return gateCheckRequest(
    {
      method: req.method,
      contentType: req.headers['content-type'],
      uuid: req.headers['kh-run-uuid'],
      query: new URLSearchParams(req.query),
      sourceIp: undefined,
      nowMs: req.nowMs,
    },
    access,
  );
}

/**
 * `POST /check` behind the report function's URL, for HealthCheck runs: gateCheckEvent, then the bounded
 * body and v3's report semantics over the HealthCheck's status (handleCheckReport), with the report
 * endpoint's key, unsigned policy and scope. A report without a signed run is found by its UUID among the
 * HealthChecks served (one LIST per namespace), as v3 does.
 */
export async function checkReportFromUrlEvent(
  event: APIGatewayProxyEventV2,
  deps: ReportEventDeps,
): Promise<APIGatewayProxyStructuredResultV2> {
  const clock = deps.client.clock;
  const headers = Object.fromEntries(
    Object.entries(event.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
  );
  const access: ReportAccess = { key: deps.reportKey, unsigned: deps.unsigned, scope: deps.scope };
  const gate = gateCheckEvent(
    {
      method: event.requestContext?.http?.method ?? 'POST',
      headers,
      query: event.rawQueryString ?? '',
      nowMs: clock.nowMs(),
    },
    access,
  );
  if (!gate.ok) {
    deps.log.warn('report refused', { status: gate.status, reason: gate.message, path: CHECK_PATH });
    return text(gate.status, gate.message);
  }
  const body = event.body
    ? event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : event.body
    : '';
  if (Buffer.byteLength(body) > DEFAULT_MAX_BODY_BYTES)
    return text(400, `report rejected: body is over the ${DEFAULT_MAX_BODY_BYTES}-byte limit`);
  const api = healthCheckApi(deps.client);
  const port = healthCheckPort(api);
  try {
    const result = await handleCheckReport(
      {
        findRun: findRunByUuid(api, deps.scope),
        state: { read: port.readState, replace: port.replaceState },
        clock,
        log: deps.log,
        server: deps.server,
        ...(deps.remainingMs ? { maxHoldMs: Math.max(0, deps.remainingMs() - ANSWER_MARGIN_MS) } : {}),
      },
      { caller: gate.caller, uuid: gate.uuid, body },
    );
    return text(result.status, result.message);
  } catch (error) {
    deps.log.error('report endpoint failed', { error: loggableError(error), path: CHECK_PATH });
    return text(500, 'internal error; retry');
  }
}
