// The khrun chart's `helm test` (templates/tests/check-install.yaml runs it in the khrun image with
// `node --input-type=module -e`, no dependencies): GETs each API path of KHRUN_TEST_CHECKS (JSON,
// [{what, path}]) from the API server as the pod's ServiceAccount (khrun-test) and exits 1 unless every one
// answers 200 before KHRUN_TEST_DEADLINE_SECONDS. The chart gives it the runner PodTemplate, the tick's (or
// sync's) CronJob and, with the server, the server's /healthz through the API server's service proxy (the
// Service's ready endpoints, without relying on cluster DNS). One line per check: `ok: WHAT` or
// `FAILED: WHAT: GET PATH answered STATUS: BODY`.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';

const SA = '/var/run/secrets/kubernetes.io/serviceaccount';
const checks = JSON.parse(process.env.KHRUN_TEST_CHECKS || '[]');
const deadlineMs = Date.now() + Number(process.env.KHRUN_TEST_DEADLINE_SECONDS || '60') * 1000;
const api = {
  host: process.env.KUBERNETES_SERVICE_HOST,
  port: process.env.KUBERNETES_SERVICE_PORT,
  ca: readFileSync(`${SA}/ca.crt`),
  headers: { authorization: `Bearer ${readFileSync(`${SA}/token`, 'utf8').trim()}` },
};

/** One GET: its status (0 when nothing answered) and the first 2,000 characters of the body. */
function get(path) {
  return new Promise((resolve) => {
    const req = request({ ...api, path, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        if (body.length < 2000) body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', (error) => resolve({ status: 0, body: error.message }));
    req.end();
  });
}

/** GET until 200 or the deadline (a server just installed may not be ready yet), backing off to 5 s. */
async function until200(path) {
  for (let delayMs = 500; ; delayMs = Math.min(delayMs * 2, 5000)) {
    const answer = await get(path);
    if (answer.status === 200 || Date.now() + delayMs > deadlineMs) return answer;
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
}

if (!Array.isArray(checks) || checks.length === 0) {
  console.log('FAILED: nothing to check (KHRUN_TEST_CHECKS is empty)');
  process.exit(1);
}
let failed = 0;
for (const check of checks) {
  const answer = await until200(check.path);
  if (answer.status === 200) {
    console.log(`ok: ${check.what}`);
  } else {
    failed += 1;
    const body = answer.body.trim().replace(/\s+/g, ' ').slice(0, 300);
    console.log(`FAILED: ${check.what}: GET ${check.path} answered ${answer.status || 'nothing'}: ${body}`);
  }
}
process.exit(failed ? 1 : 0);
