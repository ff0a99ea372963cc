import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { retryWithBackoff } from '../../lib/core/backoff.ts';
import { ANNOTATION, readAcceptedReport } from '../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { buildTestBundles } from './helpers/deploy.ts';
import { createCheck, nodeContainer, npmClientEnv, outcomeOf, readState, runKhrun } from './helpers/khrun.ts';

// `khrun serve` (the built bundle) on the pod network's host address, as a shared report server: runners
// point checker pods at it with KH_EXTERNAL_REPORTING_URL, the npm client (no header, identified by
// source IP) and a header-sending client report there, and the runner sees the report in the khstate.

const kc = adminKubeConfig();
let ns: string;
let dist: string;
let server: { child: ChildProcess; base: string; output: () => string; exited: Promise<number | null> };

async function startServe(args: string[]): Promise<typeof server> {
  const child = spawn(
    process.execPath,
    [join(dist, 'khrun.mjs'), 'serve', '--host', inject('hostIp'), '--port', '0', ...args],
    {
      env: { ...process.env, KUBECONFIG: inject('kubeconfigPath'), POWERTOOLS_LOG_LEVEL: 'INFO' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c;
      const m = /reports at (http:\/\/\S+)\/externalCheckStatus/.exec(out);
      if (m) resolve(m[1]!);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (c: Buffer) => {
      out += c;
    });
    void exited.then((code) => reject(new Error(`khrun serve exited (${code}) before listening:\n${out}`)));
  });
  return { child, base: url, output: () => out, exited };
}

beforeAll(async () => {
  dist = await buildTestBundles();
  ns = await freshNamespace(kc, 'serve');
  server = await startServe(['--namespaces', ns, '--drain-seconds', '2', '--max-body-bytes', '1024']);
}, 120_000);
afterAll(async () => {
  server?.child.kill('SIGKILL');
  await dropNamespace(kc, ns);
});

describe('khrun serve', () => {
  it('answers health and readiness', async () => {
    expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.base}/readyz`)).status).toBe(200);
    expect((await fetch(`${server.base}/nothing-here`)).status).toBe(404);
  });

  it('takes the reports of runs whose runner points checker pods at it', async () => {
    await createCheck(kc, ns, 'via-server', {
      containers: [
        nodeContainer("require('kuberhealthy').ReportFailure(['reported through khrun serve']);", {
          env: npmClientEnv,
        }),
      ],
    });
    const result = await runKhrun(['--check', 'via-server', '--namespace', ns, '--output', 'json'], {
      KH_EXTERNAL_REPORTING_URL: `${server.base}/externalCheckStatus`,
    });
    expect(outcomeOf(result)).toMatchObject({
      result: 'recorded',
      kind: 'Failed',
      errors: ['reported through khrun serve'],
    });
    const state = await readState(kc, ns, 'via-server');
    expect(readAcceptedReport(state)).toMatchObject({ ok: false, errors: ['reported through khrun serve'] });
    expect(state?.metadata.annotations?.[ANNOTATION.outcome]).toBeDefined();
    expect(server.output()).toContain('"message":"report accepted"');
  });

  it('serves the status JSON, page and metrics of the checks it watches', async () => {
    // The report above is recorded; the server's khstate cache sees it through its watch.
    const key = `${ns}/via-server`;
    type Status = { OK: boolean; CheckDetails: Record<string, { OK: boolean; Errors: string[] }> };
    const status = await retryWithBackoff<Status>(
      `${key} in the server's status`,
      async () => {
        const res = await fetch(`${server.base}/json`);
        const body = res.status === 200 ? ((await res.json()) as Status) : undefined;
        return body?.CheckDetails[key] ? body : undefined;
      },
      { initialMs: 50, maxMs: 500, deadlineEpochMs: Date.now() + 30_000 },
    );
    expect(status?.OK).toBe(false);
    expect(status?.CheckDetails[key]).toMatchObject({ OK: false, Errors: ['reported through khrun serve'] });
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    expect(metrics).toContain(`kuberhealthy_check{check="${key}",namespace="${ns}",status="0"`);
    const page = await fetch(`${server.base}/`, { headers: { accept: 'text/html' } });
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect((await fetch(`${server.base}/`, { method: 'POST', body: '{"OK":true}' })).status).toBe(400);
  });

  it('refuses bodies over the limit before reading them', async () => {
    const big = await fetch(`${server.base}/externalCheckStatus`, {
      method: 'POST',
      body: JSON.stringify({ OK: false, Errors: ['x'.repeat(2048)] }),
    });
    expect(big.status).toBe(400);
    expect(await big.text()).toMatch(/over the 1024-byte limit/);
  });

  it('on SIGTERM lets a request in flight finish within the drain time, then exits 0', async () => {
    const url = new URL(server.base);
    // A request whose body is still coming when SIGTERM arrives.
    const socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let response = '';
    socket.on('data', (c: Buffer) => {
      response += c;
    });
    // Malformed on purpose: rejected without an API call, so the answer does not wait on a pod lookup.
    const body = '{"OK": true, "Errors": [';
    socket.write(
      `POST /externalCheckStatus HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    const startedMs = Date.now();
    server.child.kill('SIGTERM');
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(body.slice(5));
    const code = await server.exited;
    await closed;
    expect(code).toBe(0);
    expect(Date.now() - startedMs).toBeLessThan(5_000);
    // The in-flight request was answered, not dropped, and told to close its connection.
    expect(response).toMatch(/^HTTP\/1\.1 400/);
    expect(response).toContain('report rejected');
    expect(server.output()).toContain('"message":"shutting down"');
    expect(server.output()).toContain('"message":"stopped"');
  });
});
