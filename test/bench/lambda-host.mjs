// A stand-in for the Lambda runtime, spawned by the benchmark (lambda-cost.ts): imports the bundled runCheck
// and report handlers as a cold start would (timed: the init phase), invokes runCheck once per event of the
// plan, one after another (a warm execution environment), and serves the report function's URL on the pod
// network so checker pods report to the report handler, whose invocations are timed too. Prints one line
// `KHRUN_BENCH_LAMBDA <json>` with every duration. Plain JavaScript: no loader between Node and the bundles.
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const plan = JSON.parse(process.env.KHRUN_BENCH_LAMBDA_PLAN ?? '{}');
let requests = 0;

function context(functionName, timeoutMs, memoryMb) {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: `bench-${++requests}`,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'bench',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done() {},
    fail() {},
    succeed() {},
  };
}

const readBody = (req) =>
  new Promise((resolve) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => resolve(body));
  });

async function timedImport(file) {
  const t0 = performance.now();
  const mod = await import(pathToFileURL(join(plan.dist, file)).href);
  return { handler: mod.handler, ms: performance.now() - t0 };
}

const reportMs = [];
let report;
// The report function's URL: each request becomes the function URL event (payload 2.0) the handler gets.
const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const body = await readBody(req);
  const event = {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'bench',
      domainName: 'bench.lambda-url.eu-west-1.on.aws',
      domainPrefix: 'bench',
      http: {
        method: req.method ?? 'GET',
        path: url.pathname,
        protocol: 'HTTP/1.1',
        sourceIp: req.socket.remoteAddress ?? '',
        userAgent: String(req.headers['user-agent']),
      },
      requestId: 'r',
      routeKey: '$default',
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
    body,
    isBase64Encoded: false,
  };
  const t0 = performance.now();
  const result = await report(
    event,
    context('khrun-bench-report', plan.reportTimeoutMs, plan.reportMemoryMb),
  );
  reportMs.push(performance.now() - t0);
  res.writeHead(result.statusCode, result.headers).end(result.body);
});
await new Promise((resolve) => server.listen(0, plan.reportHost, resolve));
process.env.KH_EXTERNAL_REPORTING_URL = `http://${plan.reportHost}:${server.address().port}/externalCheckStatus`;

const runCheckInit = await timedImport('lambda-run-check.mjs');
const reportInit = await timedImport('lambda-report.mjs');
report = reportInit.handler;
const invocations = [];
for (const event of plan.events) {
  const t0 = performance.now();
  const result = await runCheckInit.handler(
    event,
    context('khrun-bench-runCheck', plan.runCheckTimeoutMs, plan.runCheckMemoryMb),
  );
  invocations.push({ ms: performance.now() - t0, result });
}
server.close();
process.stdout.write(
  `KHRUN_BENCH_LAMBDA ${JSON.stringify({ initMs: { runCheck: runCheckInit.ms, report: reportInit.ms }, invocations, reportMs })}\n`,
);
process.exit(0);
