import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FunctionInvocation, LambdaFunction } from './lambda-function.ts';

/** One request the Invoke API received: what was asked, and the invocation it started. */
export interface ReceivedInvoke {
  functionName: string;
  invocationType: 'Event' | 'RequestResponse';
  /** The Authorization header as sent (SigV4, checked for shape by tests, not verified here). */
  authorization: string;
  event: unknown;
  requestId: string;
  result: Promise<FunctionInvocation>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const c of req) body += c;
  return body;
}

const PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/**
 * Lambda's Invoke API (POST /2015-03-31/functions/NAME/invocations) in front of local functions, on
 * 127.0.0.1: InvocationType Event is answered 202 at once and the function runs afterwards (Lambda's
 * asynchronous queue, without its retries: serverless.yml sets none); RequestResponse answers the result,
 * with X-Amz-Function-Error: Unhandled when the runtime reported an error. An unknown function is 404
 * ResourceNotFoundException. The emulator serves one function per process and no such API.
 */
export async function serveInvokeApi(functions: ReadonlyMap<string, LambdaFunction>) {
  const received: ReceivedInvoke[] = [];
  const server = createServer(async (req, res) => {
    const m = PATH.exec(new URL(req.url ?? '/', 'http://x').pathname);
    const body = await readBody(req);
    const functionName = decodeURIComponent(m?.[1] ?? '');
    const fn = functions.get(functionName);
    if (req.method !== 'POST' || !m || !fn) {
      res
        .writeHead(404, {
          'content-type': 'application/json',
          'x-amzn-errortype': 'ResourceNotFoundException',
        })
        .end(JSON.stringify({ Type: 'User', Message: `Function not found: ${functionName}` }));
      return;
    }
    const invocationType = req.headers['x-amz-invocation-type'] === 'Event' ? 'Event' : 'RequestResponse';
    const requestId = randomUUID();
    let event: unknown;
    try {
      event = body ? JSON.parse(body) : {};
    } catch {
      res
        .writeHead(400, {
          'content-type': 'application/json',
          'x-amzn-errortype': 'InvalidRequestContentException',
        })
        .end(JSON.stringify({ Type: 'User', Message: 'Could not parse request body into json' }));
      return;
    }
    const result = fn.invoke(event);
    // An asynchronous invocation's outcome is nobody's caller's: tests read it from `received`.
    result.catch(() => {});
    received.push({
      functionName,
      invocationType,
      authorization: String(req.headers.authorization ?? ''),
      event,
      requestId,
      result,
    });
    if (invocationType === 'Event') {
      res.writeHead(202, { 'x-amzn-requestid': requestId }).end();
      return;
    }
    const inv = await result;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-amzn-requestid': requestId,
    };
    if (inv.functionError || inv.timedOut) headers['x-amz-function-error'] = 'Unhandled';
    res.writeHead(200, headers).end(inv.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    received: received as ReadonlyArray<ReceivedInvoke>,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
