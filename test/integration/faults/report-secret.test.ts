import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KH_ENV } from '../../../lib/check/pod-builder.ts';
import { reportKeyOf, signedReportUrl } from '../../../lib/report/report-token.ts';
import { readLastOutcome } from '../../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, goCheckerBinary, npmClientEnv, readState, repoRoot } from '../helpers/khrun.ts';
import type { AuditEvent } from './helpers/audit.ts';
import {
  type CheckerOptions,
  checkerContainer,
  type Gate,
  NPM_CLIENT_REPORT,
  startGate,
} from './helpers/checker.ts';
import { endpointIdentity, requestsBy, tally } from './helpers/endpoint-identity.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { post } from './helpers/http-abuse.ts';
import { isRunning, podEnv, waitForCheckPod } from './helpers/invariants.ts';
import { type Runner, resultOf, startRunner, stopRunner } from './helpers/khrun-process.ts';

// Requests that must be refused, sent to a real report endpoint: `khrun run`'s own (a key of its own) and
// `khrun serve` with the deployment's KHRUN_REPORT_KEY. Each endpoint runs as a ServiceAccount of its own,
// so the API server's audit log counts exactly the requests it made: a refused request must cost none.
// Then the genuine checkers (the test's, the npm client without a header, v2.7.1's Go client) report to
// the signed URLs they were given, unchanged, and their runs are recorded.

const kc = adminKubeConfig();
const key = randomBytes(32).toString('hex');
const VALID = '{"OK":true,"Errors":[]}';
const REPS = 10;
// No renewals during the test: a renewal is a khstate write, which would blur nothing here but costs time.
const QUIET_LEASE = { KHRUN_LEASE_SECONDS: '600' };
let ns: string;
let gate: Gate;
const runners: Runner[] = [];
let serve: { child: ChildProcess; url: string } | undefined;

type Case = [name: string, url: string, body: string, uuid?: string];

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-secret');
  gate = await startGate(inject('hostIp'));
}, 60_000);

afterAll(async () => {
  for (const r of runners) await stopRunner(r);
  serve?.child.kill('SIGKILL');
  await gate?.close();
  await dropNamespace(kc, ns);
});

/** Waits at its gate; says "reporting now" (gate.notified) just before it sends its report. */
const gated = (name: string, extra: CheckerOptions = {}) => ({
  containers: [checkerContainer({ gateUrl: gate.waitUrl(name), notifyUrl: gate.notifyUrl(name), ...extra })],
});

/** 1 when the gated checker said it was sending its report, else 0: what the row counts as reported. */
const reportedBy = (name: string) =>
  gate.notified(name, 1_000).then(
    () => 1,
    () => 0,
  );

/** The run's checker pod (created: its env says where it reports), whatever its phase. */
async function livePod(check: string, runner: Runner): Promise<{ url: string; uuid: string; pod: V1Pod }> {
  const pod = await Promise.race([
    waitForCheckPod(kc, ns, check, (p) => podEnv(p, KH_ENV.reportingUrl) !== undefined, 'its checker pod'),
    runner.done.then((exit) => Promise.reject(new Error(`the runner exited first:\n${exit.stderr}`))),
  ]);
  return { pod, url: podEnv(pod, KH_ENV.reportingUrl) ?? '', uuid: podEnv(pod, KH_ENV.runUuid) ?? '' };
}

/** The same URL with one path segment (counted from the end) replaced. */
function withSegment(url: string, fromEnd: number, value: string): string {
  const u = new URL(url);
  const parts = u.pathname.split('/');
  parts[parts.length - fromEnd] = value;
  u.pathname = parts.join('/');
  return u.toString();
}

/** Sends every case REPS times; returns their answers and the endpoint identity's requests meanwhile. */
async function sendRefused(cases: Case[], username: string, counted: (e: AuditEvent) => boolean) {
  const fromMs = Date.now();
  const statuses: Record<string, number[]> = {};
  const reasons: Record<string, string> = {};
  for (const [name, url, body, uuid] of cases) {
    const answers: number[] = [];
    for (let i = 0; i < REPS; i++) {
      const answer = await post(url, body, uuid === undefined ? {} : { uuid });
      answers.push(answer.status);
      reasons[name] = answer.text.trim();
    }
    statuses[name] = answers;
  }
  const events = (await requestsBy(kc, username, { fromMs, toMs: Date.now() })).filter(counted);
  // Said with each failure: which requests, when (ms after the first refused request was sent).
  const seen = events.map(
    (e) =>
      `${e.verb} ${e.objectRef?.resource} +${Date.parse(e.requestReceivedTimestamp) - fromMs} ms ${e.userAgent}`,
  );
  return { statuses, reasons, events, seen: `requests: ${JSON.stringify(seen)}` };
}

const all400 = (cases: Case[]) => Object.fromEntries(cases.map(([name]) => [name, Array(REPS).fill(400)]));

async function startServe(kubeconfigPath: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'functions/khrun.mjs'),
      'serve',
      '--host',
      inject('hostIp'),
      '--port',
      '0',
      '--namespaces',
      ns,
      '--no-status',
    ],
    {
      env: {
        ...process.env,
        KUBECONFIG: kubeconfigPath,
        KHRUN_REPORT_KEY: key,
        POWERTOOLS_LOG_LEVEL: 'INFO',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      out += c;
      const m = /reports at (http:\/\/\S+\/externalCheckStatus)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.stderr?.on('data', (c: Buffer) => {
      out += c;
    });
    child.once('exit', (code) => reject(new Error(`khrun serve exited (${code}) before listening:\n${out}`)));
  });
  return { child, url };
}

describe('refused reports cost the API server nothing', () => {
  it("khrun run's own endpoint: unsigned, forged, replayed and malformed requests", async () => {
    const row = faultScenario("hostile report to khrun run's own endpoint");
    const runner = await endpointIdentity(kc, ns, 'runner');
    const target = { kubeconfigPath: runner.kubeconfigPath, hostIp: inject('hostIp') };
    await createCheck(kc, ns, 'other', { containers: [checkerContainer()] });
    await createCheck(kc, ns, 'target', gated('target'), { timeout: '5m' });
    const finished = startRunner('other', ns, {}, target);
    runners.push(finished);
    const otherUrl = (await livePod('other', finished)).url;
    const finishedExit = await finished.done;
    const live = startRunner('target', ns, QUIET_LEASE, target);
    runners.push(live);
    const run = await livePod('target', live);
    // Its pod Running: the runner has made its pod and started its watches; from here it waits, quiet.
    await waitForCheckPod(kc, ns, 'target', isRunning, 'its checker pod Running');
    const base = `${new URL(run.url).origin}/externalCheckStatus`;
    const path = (url: string) => `${new URL(run.url).origin}${new URL(url).pathname}`;
    const cases: Case[] = [
      ['no token, no header', base, VALID],
      ["no token, the live run's kh-run-uuid header (v2 style)", base, VALID, run.uuid],
      ['no token, a malformed body', base, '{"OK":'],
      ['a made-up token', withSegment(run.url, 1, randomBytes(32).toString('base64url')), VALID],
      ["another run's token (another check, another runner)", path(otherUrl), VALID],
      [
        "the live run's token under another run's UUID",
        withSegment(run.url, 3, finishedUuid(otherUrl)),
        VALID,
      ],
      [
        "the live run's token with its deadline moved",
        withSegment(run.url, 2, String(Date.now() + 3_600_000)),
        VALID,
      ],
      ["the live run's URL with another run's header", run.url, VALID, finishedUuid(otherUrl)],
      ['a path that is no token', `${base}/x/y`, VALID],
    ];
    // Only what a report can make the endpoint do (pods, khstates); the runner's own watches are not requests it answers.
    const refused = await sendRefused(
      cases,
      runner.username,
      (e) => e.verb !== 'watch' && ['pods', 'khstates'].includes(e.objectRef?.resource ?? ''),
    );
    gate.open('target');
    const exit = await live.done;
    const recorded = readLastOutcome(await readState(kc, ns, 'target'))?.uuid === run.uuid ? 1 : 0;
    const requests = tally(refused.events);
    const caused = Object.values(requests).reduce((n, c) => n + c, 0);
    const refusedCount = Object.values(refused.statuses)
      .flat()
      .filter((status) => status === 400).length;
    await row.record({
      fault: `hostile report to khrun run's own endpoint: ${cases.length} kinds (no token, v2 header only, forged, another run's, replayed, altered, malformed) × ${REPS}`,
      runs: cases.length * REPS,
      outcome: `${refusedCount} of ${cases.length * REPS} refused with 400 before the body was read; API requests they caused, counted in the audit log by the endpoint's own ServiceAccount: ${caused}; the genuine report then ${recorded ? 'recorded' : 'NOT recorded'}`,
      reported: await reportedBy('target'),
      recorded,
    });

    expect(resultOf(finishedExit)).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
    expect({ requests, statuses: refused.statuses }, refused.seen).toEqual({
      requests: {},
      statuses: all400(cases),
    });
    expect(refused.reasons['no token, no header']).toMatch(/only at the signed URL/);
    expect(refused.reasons['a made-up token']).toMatch(/token in the reporting URL is not valid/);
    expect(resultOf(exit), exit.stderr).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
    expect(recorded).toBe(1);
  }, 180_000);

  it('khrun serve with KHRUN_REPORT_KEY: refused requests cost 0; npm and Go v2.7.1 clients report through signed URLs', async () => {
    const row = faultScenario('hostile report to khrun serve (KHRUN_REPORT_KEY)');
    const server = await endpointIdentity(kc, ns, 'server');
    serve = await startServe(server.kubeconfigPath);
    const shared = { KH_EXTERNAL_REPORTING_URL: serve.url, KHRUN_REPORT_KEY: key, ...QUIET_LEASE };
    const go = await goCheckerBinary();
    // Its URL is replayed after its deadline below, so the deadline is short; 45 s leaves room for a pod
    // start at a CI load average of 12 (20 s did not).
    await createCheck(kc, ns, 'done', { containers: [checkerContainer()] }, { timeout: '45s' });
    await createCheck(
      kc,
      ns,
      'npm',
      gated('npm', { exec: process.execPath, execArgs: NPM_CLIENT_REPORT, env: npmClientEnv }),
      { timeout: '5m' },
    );
    await createCheck(kc, ns, 'go', gated('go', { exec: go }), { timeout: '5m' });
    const finished = startRunner('done', ns, shared);
    runners.push(finished);
    const done = await livePod('done', finished);
    const finishedExit = await finished.done;
    // A finished run's URL before its deadline: the khstate must be read to know the run is over.
    const early = await sendRefused(
      [['a finished run, replayed before its deadline', done.url, VALID]],
      server.username,
      () => true,
    );
    const earlyTally = tally(early.events);

    const [npmRunner, goRunner] = [startRunner('npm', ns, shared), startRunner('go', ns, shared)];
    runners.push(npmRunner, goRunner);
    const npm = await livePod('npm', npmRunner);
    const goRun = await livePod('go', goRunner);

    const doneDeadline = Number(new URL(done.url).pathname.split('/').at(-2));
    await until(() => Date.now() > doneDeadline + 500, doneDeadline - Date.now() + 5_000);
    const otherKey = reportKeyOf(randomBytes(32).toString('hex'));
    const cases: Case[] = [
      ['no token, no header', serve.url, VALID],
      ["no token, a live run's kh-run-uuid header (v2 style)", serve.url, VALID, npm.uuid],
      ['a URL signed with another key', signedReportUrl(serve.url, otherKey, runRefOf(npm.url)), VALID],
      ['a made-up token', withSegment(npm.url, 1, randomBytes(32).toString('base64url')), VALID],
      ["a live run's token under another live run's UUID", withSegment(npm.url, 3, goRun.uuid), VALID],
      ['a finished run, replayed after its deadline', done.url, VALID],
      [
        'a run of a namespace not served',
        signedReportUrl(serve.url, reportKeyOf(key), { ...runRefOf(npm.url), namespace: 'kube-system' }),
        VALID,
      ],
      ['a path that is no token', `${serve.url}/x/y`, VALID],
    ];
    const refused = await sendRefused(cases, server.username, () => true);

    const fromMs = Date.now();
    gate.open('npm');
    gate.open('go');
    const exits = [await npmRunner.done, await goRunner.done];
    const genuine = tally(await requestsBy(kc, server.username, { fromMs, toMs: Date.now() }));
    let recorded = 0;
    for (const [check, run] of [
      ['npm', npm],
      ['go', goRun],
    ] as const) {
      if (readLastOutcome(await readState(kc, ns, check))?.uuid === run.uuid) recorded++;
    }
    const requests = tally(refused.events);
    const caused = Object.values(requests).reduce((n, c) => n + c, 0);
    const refusedCount = Object.values(refused.statuses)
      .flat()
      .filter((status) => status === 400).length;
    await row.record({
      fault: `hostile report to khrun serve (KHRUN_REPORT_KEY): ${cases.length} kinds (no token, v2 header only, other key, forged, finished run after its deadline, namespace not served, malformed) × ${REPS}`,
      runs: cases.length * REPS,
      outcome: `${refusedCount} of ${cases.length * REPS} refused with 400; API requests they caused (audit log, the server's own ServiceAccount): ${caused}. A finished run's URL replayed before its deadline: ${early.events.length}/${REPS} requests (${
        Object.entries(earlyTally)
          .map(([k, n]) => `${n} ${k}`)
          .join(', ') || 'none'
      }). The npm client (no header) and v2.7.1's Go client reported to their signed URLs unchanged: ${Object.entries(
        genuine,
      )
        .map(([k, n]) => `${n} ${k}`)
        .join(', ')}`,
      reported: (await reportedBy('npm')) + (await reportedBy('go')),
      recorded,
    });

    expect(resultOf(finishedExit)).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
    expect(early.statuses).toEqual(all400([['a finished run, replayed before its deadline', '', '']]));
    expect(Object.keys(earlyTally), early.seen).toEqual(['get khstates']);
    expect(npm.url.startsWith(`${serve.url}/${ns}/npm/${npm.uuid}/`)).toBe(true);
    expect({ requests, statuses: refused.statuses }, refused.seen).toEqual({
      requests: {},
      statuses: all400(cases),
    });
    for (const exit of exits)
      expect(resultOf(exit), exit.stderr).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
    // Two reports: each one read and one write of its khstate, and not a single pod lookup.
    expect(genuine).toEqual({ 'get khstates': 2, 'update khstates': 2 });
    expect(recorded).toBe(2);
  }, 240_000);
});

function finishedUuid(url: string): string {
  return new URL(url).pathname.split('/').at(-3) ?? '';
}

function runRefOf(url: string) {
  const [, , namespace = '', checkName = '', uuid = '', deadline = '0'] = new URL(url).pathname.split('/');
  return { namespace, checkName, uuid, deadlineMs: Number(deadline) };
}

/** Waits until a condition on the clock holds (bounded). */
async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('the condition did not hold in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
