import { describe, expect, it } from 'vitest';
import { functionUrlEvent, functionUrlResponse } from '../src/lambda/function-url.ts';
import { invokeResult, parseReportLine } from '../src/lambda/invoke-result.ts';
import type { FunctionInvocation } from '../src/lambda/lambda-function.ts';

describe('parseReportLine', () => {
  it('reads the emulator REPORT line of a cold invocation, and of a warm one', () => {
    expect(
      parseReportLine(
        'REPORT RequestId: r-1\tInit Duration: 412.30 ms\tDuration: 80.12 ms\tBilled Duration: 81 ms\tMemory Size: 512 MB\tMax Memory Used: 512 MB\t',
      ),
    ).toEqual({ requestId: 'r-1', initMs: 412.3, durationMs: 80.12, billedMs: 81, memorySizeMb: 512 });
    expect(
      parseReportLine(
        'REPORT RequestId: r-2\tDuration: 3.00 ms\tBilled Duration: 3 ms\tMemory Size: 512 MB\tMax Memory Used: 512 MB\t',
      ),
    ).toEqual({ requestId: 'r-2', initMs: undefined, durationMs: 3, billedMs: 3, memorySizeMb: 512 });
    expect(parseReportLine('START RequestId: r-1 Version: $LATEST')).toBeUndefined();
    expect(parseReportLine('REPORT RequestId: r-3\tsomething else')).toBeUndefined();
  });
});

describe('invokeResult', () => {
  const base = { requestId: 'r', clientMs: 5 };
  it('a return value is the payload', () => {
    const r = invokeResult({ ...base, statusCode: 200, body: '{"result":"recorded"}' });
    expect(r).toMatchObject({ payload: { result: 'recorded' }, timedOut: false });
    expect(r.functionError).toBeUndefined();
  });
  it("the runtime's error document is the function error, whatever the emulator's status", () => {
    const r = invokeResult({
      ...base,
      statusCode: 200,
      body: '{"errorType":"ConfigError","errorMessage":"bad event","trace":["ConfigError: bad event"]}',
    });
    expect(r.functionError).toEqual({
      errorType: 'ConfigError',
      errorMessage: 'bad event',
      trace: ['ConfigError: bad event'],
    });
    expect(r.payload).toBeUndefined();
    expect(invokeResult({ ...base, statusCode: 502, body: '' }).functionError).toBeUndefined();
    expect(invokeResult({ ...base, statusCode: 502, body: '' }).payload).toBeUndefined();
    // A return value that merely has such fields among others is a return value.
    const returned = invokeResult({
      ...base,
      statusCode: 200,
      body: '{"errorType":"x","errorMessage":"y","check":"ns/a"}',
    });
    expect(returned.functionError).toBeUndefined();
    expect(returned.payload).toMatchObject({ check: 'ns/a' });
  });
  it("the emulator's timeout answer is a timeout, not a payload", () => {
    const r = invokeResult({ ...base, statusCode: 200, body: 'Task timed out after 5.00 seconds' });
    expect(r.timedOut).toBe(true);
    expect(r.payload).toBeUndefined();
  });
});

describe('function URL', () => {
  it('builds the 2.0 event: path, query, headers, text body; the IAM authorizer when given', () => {
    const event = functionUrlEvent({
      method: 'POST',
      url: '/externalCheckStatus?khrun=%2Fns%2Fa',
      headers: { 'content-type': 'application/json', 'user-agent': 'Go-http-client/1.1' },
      body: Buffer.from('{"OK":true}'),
      sourceIp: '10.1.0.5',
      nowMs: Date.UTC(2026, 0, 1),
    });
    expect(event).toMatchObject({
      version: '2.0',
      rawPath: '/externalCheckStatus',
      rawQueryString: 'khrun=%2Fns%2Fa',
      queryStringParameters: { khrun: '/ns/a' },
      body: '{"OK":true}',
      isBase64Encoded: false,
      requestContext: { http: { method: 'POST', sourceIp: '10.1.0.5', userAgent: 'Go-http-client/1.1' } },
    });
    expect(event.requestContext).not.toHaveProperty('authorizer');
    const iam = functionUrlEvent({
      method: 'POST',
      url: '/api/run',
      headers: {},
      body: Buffer.from([0xff, 0x00]),
      sourceIp: '203.0.113.9',
      iam: { accessKey: 'AK', accountId: '1', callerId: 'C', userArn: 'arn:aws:iam::1:user/u', userId: 'U' },
      nowMs: 0,
    });
    expect(iam).toMatchObject({ body: '/wA=', isBase64Encoded: true });
    expect(iam.requestContext).toMatchObject({ authorizer: { iam: { userArn: 'arn:aws:iam::1:user/u' } } });
  });

  const inv = (over: Partial<FunctionInvocation>): FunctionInvocation => ({
    requestId: 'r',
    statusCode: 200,
    body: '',
    clientMs: 1,
    timedOut: false,
    newEnvironment: false,
    runtimeStarted: false,
    ...over,
  });
  it('answers with the response object; a failed or timed-out invocation is 502', () => {
    const ok = functionUrlResponse(
      inv({ payload: { statusCode: 201, headers: { 'content-type': 'text/plain' }, body: 'ok\n' } }),
    );
    expect(ok).toEqual({
      statusCode: 201,
      headers: { 'content-type': 'text/plain' },
      body: Buffer.from('ok\n'),
    });
    expect(functionUrlResponse(inv({ payload: { a: 1 } }))).toMatchObject({
      statusCode: 200,
      body: Buffer.from('{"a":1}'),
    });
    expect(
      functionUrlResponse(inv({ statusCode: 502, functionError: { errorType: 'E', errorMessage: 'm' } }))
        .statusCode,
    ).toBe(502);
    expect(functionUrlResponse(inv({ timedOut: true })).statusCode).toBe(502);
  });
});
