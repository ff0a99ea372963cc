import type { KubeConfig } from '@kubernetes/client-node';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Log } from '../core/log.ts';
import { loggableError } from '../kube/errors.ts';
import { kubePort } from '../kube/kube-port.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { handleReport } from '../report/handle-report.ts';
import { DEFAULT_MAX_BODY_BYTES, REPORT_PATH } from '../report/http-server.ts';
import { normalizeIp } from '../report/identify-caller.ts';
import { kubeCallerLookup } from '../report/kube-lookup.ts';

const text = (statusCode: number, body: string): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
  body: `${body}\n`,
});

/**
 * A Lambda function URL request (payload 2.0) through the same report protocol as the HTTP server:
 * same path, same body limit, same status codes.
 */
export async function reportFromUrlEvent(
  event: APIGatewayProxyEventV2,
  deps: { kc: KubeConfig; scope: NamespaceScope; log: Log; server: string; ipLookupWaitMs?: number },
): Promise<APIGatewayProxyStructuredResultV2> {
  const path = event.rawPath ?? event.requestContext?.http?.path ?? '/';
  if (path !== REPORT_PATH) return text(404, `not found: checker pods report to ${REPORT_PATH}`);
  const body = event.body
    ? event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : event.body
    : '';
  if (Buffer.byteLength(body) > DEFAULT_MAX_BODY_BYTES) {
    return text(400, `report rejected: body is over the ${DEFAULT_MAX_BODY_BYTES}-byte limit`);
  }
  const kube = kubePort(deps.kc);
  const headers = Object.fromEntries(
    Object.entries(event.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
  );
  try {
    const result = await handleReport(
      {
        lookup: kubeCallerLookup(deps.kc, deps.scope, { ipLookupWaitMs: deps.ipLookupWaitMs }),
        state: { read: kube.readState, replace: kube.replaceState },
        clock: { nowMs: () => Date.now() },
        log: deps.log,
        server: deps.server,
      },
      {
        method: event.requestContext?.http?.method ?? 'POST',
        headerUuid: headers['kh-run-uuid'],
        sourceIp: normalizeIp(event.requestContext?.http?.sourceIp),
        body,
      },
    );
    return text(result.status, result.message);
  } catch (error) {
    deps.log.error('report endpoint failed', { error: loggableError(error) });
    return text(500, 'internal error; retry');
  }
}
