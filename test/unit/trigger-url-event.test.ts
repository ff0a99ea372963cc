import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { silentLog } from '../../lib/core/log.ts';
import { triggerFromUrlEvent } from '../../lib/trigger/url-event.ts';

const IAM = {
  iam: {
    accessKey: 'AKIDEXAMPLE',
    accountId: '123456789012',
    callerId: 'AROAEXAMPLE:gh',
    cognitoIdentity: null,
    principalOrgId: '',
    userArn: 'arn:aws:sts::123456789012:assumed-role/scheduler/gh',
    userId: 'AROAEXAMPLE:gh',
  },
};

function event(opts: {
  method?: string;
  path?: string;
  query?: string;
  iam?: boolean;
}): APIGatewayProxyEventV2 {
  const path = opts.path ?? '/api/run';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: opts.query ?? 'namespace=kuberhealthy&healthcheck=example-success',
    headers: {},
    isBase64Encoded: false,
    requestContext: {
      http: {
        method: opts.method ?? 'POST',
        path,
        protocol: 'HTTP/1.1',
        sourceIp: '203.0.113.9',
        userAgent: 'curl',
      },
      ...(opts.iam === false ? {} : { authorizer: IAM }),
    },
  } as unknown as APIGatewayProxyEventV2;
}

const deps = (dispatch = vi.fn(async () => 'req-1')) => ({
  scope: { namespaces: ['kuberhealthy'] },
  dispatch,
  log: silentLog,
});

describe('the trigger as a function URL event', () => {
  it('dispatches an accepted request and answers 202 with the invocation', async () => {
    const d = deps();
    const res = await triggerFromUrlEvent(event({}), d);
    expect(res.statusCode).toBe(202);
    expect(JSON.parse(res.body ?? '')).toEqual({
      check: 'kuberhealthy/example-success',
      accepted: true,
      invocation: 'req-1',
    });
    expect(d.dispatch).toHaveBeenCalledWith({ namespace: 'kuberhealthy', checkName: 'example-success' });
  });

  it('refuses a request without an IAM identity (a URL deployed with AuthType NONE) before anything', async () => {
    const d = deps();
    const res = await triggerFromUrlEvent(event({ iam: false }), d);
    expect(res.statusCode).toBe(401);
    expect(res.headers?.['www-authenticate']).toBe('AWS4-HMAC-SHA256');
    expect(d.dispatch).not.toHaveBeenCalled();
  });

  it.each([
    ['another path', { path: '/run' }, 404],
    ['GET', { method: 'GET' }, 405],
    ['a bad check name', { query: 'namespace=kuberhealthy&healthcheck=Bad_Name' }, 400],
    ['wait=true, which a Lambda cannot do', { query: 'namespace=kuberhealthy&healthcheck=x&wait=true' }, 400],
    ['a namespace outside KHRUN_NAMESPACES', { query: 'namespace=kube-system&healthcheck=x' }, 403],
  ])('refuses %s without dispatching', async (_label, opts, status) => {
    const d = deps();
    const res = await triggerFromUrlEvent(event(opts), d);
    expect(res.statusCode).toBe(status);
    expect(JSON.parse(res.body ?? '')).toMatchObject({ accepted: false, reason: expect.any(String) });
    expect(d.dispatch).not.toHaveBeenCalled();
  });

  it('answers 502 when the runCheck function cannot be invoked', async () => {
    const d = deps(vi.fn(async () => Promise.reject(new Error('Lambda Invoke answered 429'))));
    const res = await triggerFromUrlEvent(event({}), d);
    expect(res.statusCode).toBe(502);
    expect(JSON.parse(res.body ?? '')).toEqual({
      check: 'kuberhealthy/example-success',
      accepted: false,
      reason: 'the runCheck function could not be invoked; retry',
    });
  });
});
