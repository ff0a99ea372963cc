import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Log } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import { gateTrigger, TRIGGER_PATH } from './gate.ts';

/** Hands a run to whatever performs it (the runCheck function, invoked asynchronously); resolves to its id. */
export type Dispatch = (target: {
  namespace: string;
  checkName: string;
  cluster?: string;
}) => Promise<string>;

const json = (
  statusCode: number,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
  body: `${JSON.stringify(body)}\n`,
});

/** The IAM identity Lambda found on a request to a function URL with AuthType AWS_IAM; undefined with NONE. */
function iamCaller(event: APIGatewayProxyEventV2): string | undefined {
  const context = event.requestContext as { authorizer?: { iam?: { userArn?: unknown } } } | undefined;
  const arn = context?.authorizer?.iam?.userArn;
  return typeof arn === 'string' && arn !== '' ? arn : undefined;
}

/**
 * `POST /api/run` as a Lambda function URL event (payload 2.0). Lambda has authenticated the caller
 * (AuthType AWS_IAM: SigV4 and lambda:InvokeFunctionUrl) before the handler runs; the handler still
 * refuses a request without an IAM identity, so a URL deployed with AuthType NONE stays closed. The
 * gate then judges the request, and an accepted one is dispatched and answered 202 without waiting.
 */
export async function triggerFromUrlEvent(
  event: APIGatewayProxyEventV2,
  deps: { scope: NamespaceScope; dispatch: Dispatch; log: Log; clusters?: readonly string[] },
): Promise<APIGatewayProxyStructuredResultV2> {
  const path = event.rawPath ?? event.requestContext?.http?.path ?? '/';
  if (path !== TRIGGER_PATH) return json(404, { accepted: false, reason: `not found: POST ${TRIGGER_PATH}` });
  const caller = iamCaller(event);
  if (!caller) {
    deps.log.error(
      'trigger refused: the request carries no IAM identity; the function URL must use AuthType AWS_IAM',
    );
    return json(
      401,
      { accepted: false, reason: 'sign the request with AWS SigV4 (service lambda)' },
      { 'www-authenticate': 'AWS4-HMAC-SHA256' },
    );
  }
  const decision = gateTrigger(
    { auth: { kind: 'iam' }, scope: deps.scope, canWait: false, clusters: deps.clusters },
    {
      method: event.requestContext?.http?.method ?? '',
      query: event.rawQueryString ?? '',
      authorization: undefined,
    },
  );
  if (!decision.ok) {
    deps.log.warn('trigger refused', { status: decision.status, reason: decision.reason, caller });
    return json(decision.status, { accepted: false, reason: decision.reason }, decision.headers);
  }
  const { namespace, checkName, cluster } = decision.target;
  const check = `${namespace}/${checkName}`;
  const where = cluster === undefined ? {} : { cluster };
  try {
    const invocation = await deps.dispatch({ namespace, checkName, ...where });
    deps.log.info('run triggered', { check, ...where, caller, invocation });
    return json(202, { check, ...where, accepted: true, invocation });
  } catch (error) {
    deps.log.error('trigger could not dispatch the run', {
      check,
      ...where,
      error: error instanceof Error ? error.message : String(error),
    });
    return json(502, {
      check,
      ...where,
      accepted: false,
      reason: 'the runCheck function could not be invoked; retry',
    });
  }
}
