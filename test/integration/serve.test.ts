import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { retryWithBackoff } from '../../lib/core/backoff.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION } from '../../lib/healthcheck/resources.ts';
import { ANNOTATION, readAcceptedReport, readLastOutcome } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import { buildTestBundles } from './helpers/deploy.ts';
import { createCheck, nodeContainer, npmClientEnv, outcomeOf, readState, runKhrun } from './helpers/khrun.ts';

// `khrun serve` (the built bundle) on the pod network's host address, as a shared report server: runners
// point checker pods at it with KH_EXTERNAL_REPORTING_URL, the npm client (no header, identified by
// source IP) and a header-sending client report there, and the runner sees the report in the khstate.
// With a trigger token it also runs checks on `POST /api/run`, their pods reporting to itself.

const kc = adminKubeConfig();
let ns: string;
let dist: string;
let tokenDir: string;
const token = randomBytes(32).toString('hex');
let server: { child: ChildProcess; base: string; output: () => string; exited: Promise<number | null> };

async function startServe(args: string[], env: Record<string, string> = {}): Promise<typeof server> {
  const child = spawn(
    process.execPath,
    [join(dist, 'khrun.mjs'), 'serve', '--host', inject('hostIp'), '--port', '0', ...args],
    {
      env: {
        ...process.env,
        KUBECONFIG: inject('kubeconfigPath'),
        POWERTOOLS_LOG_LEVEL: 'INFO',
        // This file's pods report v2-style, unsigned (by header and source address).
        KHRUN_ALLOW_UNSIGNED_REPORTS: 'true',
        ...env,
      },
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
  // The token as a Kubernetes Secret mounts it: a file, with the newline `kubectl create secret` keeps.
  tokenDir = await mkdtemp(join(tmpdir(), 'khrun-trigger-'));
  await writeFile(join(tokenDir, 'token'), `${token}\n`, { mode: 0o600 });
  server = await startServe(['--namespaces', ns, '--drain-seconds', '2', '--max-body-bytes', '1024'], {
    KHRUN_TRIGGER_TOKEN_FILE: join(tokenDir, 'token'),
  });
}, 120_000);
afterAll(async () => {
  server?.child.kill('SIGKILL');
  await dropNamespace(kc, ns);
  if (tokenDir) await rm(tokenDir, { recursive: true, force: true });
});

/** POST /api/run with that Authorization header, or none at all (null). */
const trigger = (query: string, auth: string | null = `Bearer ${token}`) =>
  fetch(`${server.base}/api/run?${query}`, {
    method: 'POST',
    headers: auth === null ? {} : { authorization: auth },
  });

/** Resolves with the khstate once decide says so (watched, not polled). */
function stateWhen(name: string, decide: (state: KhState) => boolean, description: string): Promise<KhState> {
  return waitFor<KhState, KhState>(kc, {
    path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${ns}/${KHSTATE_PLURAL}`,
    fieldSelector: `metadata.name=${name}`,
    decide: (items) => {
      const state = items.get(`${ns}/${name}`);
      return state && decide(state) ? state : undefined;
    },
    timeoutMs: 90_000,
    description: `khstate ${ns}/${name}: ${description}`,
  });
}

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

  it('lists a v3 HealthCheck beside the khchecks: its result, written into its status, in /json and /metrics', async () => {
    // The result as v3's controller writes it, through the status subresource; the server sees it by its watch.
    const custom = kc.makeApiClient(CustomObjectsApi);
    const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL, namespace: ns };
    const body = {
      apiVersion: `${HC_GROUP}/${HC_VERSION}`,
      kind: 'HealthCheck',
      metadata: { name: 'v3-check' },
    };
    const created = (await custom.createNamespacedCustomObject({
      ...co,
      body: { ...body, spec: { runInterval: '5m', timeout: '1m', podSpec: { spec: { containers: [] } } } },
    })) as { metadata: { resourceVersion: string } };
    const lastRunUnix = Math.floor(Date.now() / 1000);
    await custom.replaceNamespacedCustomObjectStatus({
      ...co,
      name: 'v3-check',
      body: {
        ...body,
        metadata: { name: 'v3-check', resourceVersion: created.metadata.resourceVersion },
        status: {
          ok: false,
          errors: ['v3 disk full'],
          lastRunUnix,
          runDuration: 2_000_000_000,
          failureCount: 1,
        },
      },
    });
    const key = `${ns}/v3-check`;
    type Status = { OK: boolean; HealthCheckDetails?: Record<string, Record<string, unknown>> };
    const status = await retryWithBackoff<Status>(
      `${key} in the server's status`,
      async () => {
        const res = await fetch(`${server.base}/json`);
        const json = res.status === 200 ? ((await res.json()) as Status) : undefined;
        return json?.HealthCheckDetails?.[key] ? json : undefined;
      },
      { initialMs: 50, maxMs: 500, deadlineEpochMs: Date.now() + 30_000 },
    );
    expect(status?.OK).toBe(false);
    expect(status?.HealthCheckDetails?.[key]).toMatchObject({
      ok: false,
      errors: ['v3 disk full'],
      lastRunUnix,
      runDuration: 2_000_000_000,
      failureCount: 1,
    });
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    const series = metrics.split('\n').filter((l) => l.startsWith('kuberhealthy_check{'));
    expect(
      series.filter(
        (l) =>
          l.includes('check="v3-check"') &&
          l.includes(`namespace="${ns}"`) &&
          l.includes('status="0"') &&
          l.includes('kind="HealthCheck"'),
      ),
    ).toHaveLength(1);
  });

  it('refuses bodies over the limit before reading them', async () => {
    const big = await fetch(`${server.base}/externalCheckStatus`, {
      method: 'POST',
      body: JSON.stringify({ OK: false, Errors: ['x'.repeat(2048)] }),
    });
    expect(big.status).toBe(400);
    expect(await big.text()).toMatch(/over the 1024-byte limit/);
  });

  it('POST /api/run with the token runs the check: 202 at once, the outcome recorded in its khstate', async () => {
    await createCheck(kc, ns, 'triggered', {
      // Reports after a moment, through the npm client (identified by source IP at this server).
      containers: [
        nodeContainer("setTimeout(() => require('kuberhealthy').ReportSuccess(), 1500);", {
          env: npmClientEnv,
        }),
      ],
    });
    const res = await trigger(`namespace=${ns}&healthcheck=triggered`);
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ check: `${ns}/triggered`, accepted: true });
    // The same check again while its run is in progress here: 409, nothing started.
    const again = await trigger(`namespace=${ns}&check=triggered`);
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/in progress/),
    });

    const state = await stateWhen(
      'triggered',
      (s) => readLastOutcome(s) !== undefined,
      'an outcome recorded',
    );
    const outcome = readLastOutcome(state);
    expect(outcome, `${JSON.stringify(outcome)}\n${server.output().slice(-4000)}`).toMatchObject({
      kind: 'Succeeded',
    });
    expect(state.spec.OK).toBe(true);
    expect(state.spec.AuthoritativePod).toMatch(/^khrun-serve-/);
    expect(server.output()).toContain('"message":"report accepted"');
  });

  it('POST /api/run?wait=true answers 200 with the outcome once it is recorded', async () => {
    await createCheck(kc, ns, 'triggered-wait', {
      containers: [
        nodeContainer("require('kuberhealthy').ReportFailure(['triggered and failing']);", {
          env: npmClientEnv,
        }),
      ],
    });
    const res = await trigger(`namespace=${ns}&healthcheck=triggered-wait&wait=true`);
    expect(res.status).toBe(200);
    const answer = await res.json();
    expect(answer, server.output().slice(-4000)).toMatchObject({
      check: `${ns}/triggered-wait`,
      accepted: true,
      result: 'recorded',
      kind: 'Failed',
      errors: ['triggered and failing'],
    });
    expect(readLastOutcome(await readState(kc, ns, 'triggered-wait'))).toMatchObject({ kind: 'Failed' });
  });

  it('POST /api/run refuses before any API call: a wrong token changes nothing in the khstate', async () => {
    const before = await readState(kc, ns, 'triggered');
    expect(before?.metadata.resourceVersion).toBeDefined();
    const pods = async () =>
      (await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns })).items.map(
        (p) => p.metadata?.name,
      );
    const podsBefore = await pods();

    const wrong = await trigger(`namespace=${ns}&healthcheck=triggered`, `Bearer ${'0'.repeat(64)}`);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="khrun", error="invalid_token"');
    const missing = await trigger(`namespace=${ns}&healthcheck=triggered`, null);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="khrun"');
    const basic = await trigger(`namespace=${ns}&healthcheck=triggered`, `Basic ${btoa(`khrun:${token}`)}`);
    expect(basic.status).toBe(401);
    const get = await fetch(`${server.base}/api/run?namespace=${ns}&healthcheck=triggered`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(get.status).toBe(405);
    const bad = await trigger(`namespace=${ns}&healthcheck=Not_A_Name`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { reason: string }).reason).toMatch(/is not a khcheck name/);
    const elsewhere = await trigger('namespace=kube-system&healthcheck=triggered');
    expect(elsewhere.status).toBe(403);

    const after = await readState(kc, ns, 'triggered');
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    expect(await pods()).toEqual(podsBefore);
  });

  it('POST /api/run for a khcheck that does not exist answers 404', async () => {
    const res = await trigger(`namespace=${ns}&healthcheck=no-such-check`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ accepted: false, reason: expect.stringMatching(/not found/) });
    expect(await readState(kc, ns, 'no-such-check')).toBeNull();
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
