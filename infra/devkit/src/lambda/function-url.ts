import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FunctionInvocation } from './lambda-function.ts';

/** What a function URL invokes: one function, with the event the URL builds. */
export interface UrlTarget {
  invoke(event: unknown): Promise<FunctionInvocation>;
}

export interface FunctionUrlEventInput {
  method: string;
  /** The path and query as requested: `/externalCheckStatus?khrun=...`. */
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  sourceIp: string;
  /** What Lambda adds once it has verified an AWS_IAM URL's SigV4 signature. */
  iam?: { accessKey: string; accountId: string; callerId: string; userArn: string; userId: string };
  nowMs: number;
}

/**
 * The event a function URL sends its function (payload format 2.0), built from one HTTP request (pure).
 * A body that is not UTF-8 text goes base64-encoded, as Lambda sends it.
 */
export function functionUrlEvent(r: FunctionUrlEventInput) {
  const url = new URL(r.url, 'http://function-url.local');
  const text = r.body.toString('utf8');
  const binary = !Buffer.from(text, 'utf8').equals(r.body);
  const requestContext: Record<string, unknown> = {
    accountId: 'anonymous',
    apiId: 'khrunlocal',
    domainName: 'khrunlocal.lambda-url.eu-west-1.on.aws',
    domainPrefix: 'khrunlocal',
    http: {
      method: r.method,
      path: url.pathname,
      protocol: 'HTTP/1.1',
      sourceIp: r.sourceIp,
      userAgent: r.headers['user-agent'] ?? '',
    },
    requestId: `url-${r.nowMs}`,
    routeKey: '$default',
    stage: '$default',
    time: new Date(r.nowMs).toISOString(),
    timeEpoch: r.nowMs,
  };
  if (r.iam) {
    requestContext.accountId = r.iam.accountId;
    requestContext.authorizer = { iam: { ...r.iam, cognitoIdentity: null, principalOrgId: '' } };
  }
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers: r.headers,
    ...(url.search ? { queryStringParameters: Object.fromEntries(url.searchParams.entries()) } : {}),
    requestContext,
    ...(r.body.length ? { body: binary ? r.body.toString('base64') : text } : {}),
    isBase64Encoded: r.body.length > 0 && binary,
  };
}

/** How a function URL answers from the invocation (pure): the response object, or 502 for a failed one. */
export function functionUrlResponse(inv: FunctionInvocation): {
  statusCode: number;
  headers: Record<string, string>;
  body: Buffer;
} {
  if (inv.functionError || inv.timedOut || inv.statusCode !== 200)
    return {
      statusCode: 502,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from('{"Message":"Internal Server Error"}'),
    };
  const p = inv.payload as
    | { statusCode?: number; headers?: Record<string, string>; body?: string; isBase64Encoded?: boolean }
    | undefined;
  // A result without statusCode is the body itself, JSON (the function URL's own inference).
  if (p === null || typeof p !== 'object' || typeof p.statusCode !== 'number')
    return {
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify(p ?? null)),
    };
  const body = p.body ?? '';
  return {
    statusCode: p.statusCode,
    headers: p.headers ?? {},
    body: p.isBase64Encoded ? Buffer.from(body, 'base64') : Buffer.from(body),
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A function URL (AuthType NONE) in front of a function: each HTTP request becomes the 2.0 event, the
 * invocation's result the response. Lambda's URL service is not emulated by AWS's emulator; this is the
 * mapping its documentation gives. Listens on `host` (the pod network's host address, for checker pods).
 */
export async function serveFunctionUrl(
  target: UrlTarget,
  host: string,
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    try {
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : String(v)]),
      );
      const event = functionUrlEvent({
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers,
        body: await readBody(req),
        sourceIp: req.socket.remoteAddress ?? '',
        nowMs: Date.now(),
      });
      const answer = functionUrlResponse(await target.invoke(event));
      res.writeHead(answer.statusCode, answer.headers).end(answer.body);
    } catch (error) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(error as Error).message}\n`);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    // A function URL ends in a slash (serverless.yml joins a path to it).
    url: `http://${host}:${port}/`,
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
