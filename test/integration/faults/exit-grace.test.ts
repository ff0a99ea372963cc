import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runIdOf } from '../../../lib/check/run-label.ts';
import { LATE_REPORT_GRACE_MS } from '../../../lib/run/assess.ts';
import { readAcceptedReport, readLastOutcome } from '../../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, nodeContainer, readState, repoRoot } from '../helpers/khrun.ts';
import { type AuditEvent, auditEvents } from './helpers/audit.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { ms, quantile } from './helpers/fault-table.ts';
import { checkPods } from './helpers/invariants.ts';
import { type Runner, resultOf, startRunner, stopRunner } from './helpers/khrun-process.ts';

// The late-report grace (lib/run/assess.ts, LATE_REPORT_GRACE_MS) at work on the local cluster, with real
// `khrun run` processes, one run at a time:
// - a checker that writes its whole report out and exits at once, without waiting for the answer (the
//   report still in flight at its exit), to the runner's own endpoint and to `khrun serve`: every run must
//   be recorded as its report;
// - a checker that exits 3 without reporting: recorded as exited-without-reporting within 1.5 s of its
//   exit. Exit: the process kubelet's `container exited` event (its clock, ms, the kubelet.log of the
//   cluster dir); recorded: the API server's audit event of the runner's outcome write (stageTimestamp of
//   the `khrun/record` update answered 200). Both on this machine's clock.

const kc = adminKubeConfig();
const hostIp = inject('hostIp');
const REPORTED_RUNS = Number(process.env.KHRUN_FAULTS_EXIT_REPORTED_RUNS ?? 20);
const SILENT_RUNS = Number(process.env.KHRUN_FAULTS_EXIT_SILENT_RUNS ?? 12);
/** The bound on exit → recorded for a checker that exits without reporting (issue 27, point 3). */
const SILENT_EXIT_BOUND_MS = 1_500;
const key = randomBytes(32).toString('hex');
let ns: string;
let notices: { url: string; runs: Set<string>; close: () => Promise<void> };
let serve: { child: ChildProcess; url: string } | undefined;
const runners: Runner[] = [];

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-exit');
  notices = await startNotices();
}, 60_000);
afterAll(async () => {
  for (const r of runners) await stopRunner(r);
  serve?.child.kill('SIGKILL');
  await notices?.close();
  await dropNamespace(kc, ns);
});

/**
 * Says which run it is (GET notices/<KH_RUN_UUID>, answered before it goes on: the test's count of reports
 * sent), then writes its report and exits once the request is handed to the kernel, its answer unread.
 */
const REPORT_AND_EXIT = `
const http = require('node:http');
(async () => {
  await (await fetch(process.env.NOTICE_URL + '/' + process.env.KH_RUN_UUID)).text();
  const body = JSON.stringify({ OK: true, Errors: [] });
  const req = http.request(process.env.KH_REPORTING_URL, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'kh-run-uuid': process.env.KH_RUN_UUID },
  });
  req.on('error', () => {});
  req.end(body, () => process.exit(0));
})().catch((e) => { console.error(e.message); process.exit(2); });
`;
const SILENT_EXIT = `console.error('cannot reach the widget service'); process.exit(3);`;

/** Counts the runs whose checker says it is about to report, by run UUID. */
async function startNotices() {
  const runs = new Set<string>();
  const server = createServer((req, res) => {
    runs.add(decodeURIComponent((req.url ?? '/').slice(1)));
    res.end('noted');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, hostIp, () => resolve());
  });
  return {
    url: `http://${hostIp}:${(server.address() as AddressInfo).port}`,
    runs,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `khrun serve` for the namespace, signing with the runners' key; resolves with its report URL. */
async function startServe(): Promise<{ child: ChildProcess; url: string }> {
  const args = ['serve', '--host', hostIp, '--port', '0', '--namespaces', ns, '--no-status'];
  const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), ...args], {
    env: {
      ...process.env,
      KUBECONFIG: inject('kubeconfigPath'),
      KHRUN_REPORT_KEY: key,
      POWERTOOLS_LOG_LEVEL: 'WARN',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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

interface Ran {
  uuid: string;
  /** The checker pod's uid (the kubelet's events name it). */
  podUid: string;
  /** When the recorded report arrived at its endpoint (the endpoint's clock), if one was recorded. */
  reportAtMs: number | undefined;
  /** The outcome the khstate holds for this run as its last one, with its errors (spec.Errors). */
  recorded: { kind: string; errors: string[] } | undefined;
  result: Record<string, unknown> | undefined;
  output: string;
}

/** One `khrun run` to its end, and what it left: the run recorded last and its pod. */
async function runOnce(check: string, env: Record<string, string>): Promise<Ran> {
  const runner = startRunner(check, ns, env);
  runners.push(runner);
  const exit = await runner.done;
  const state = await readState(kc, ns, check);
  const uuid = state?.spec.uuid ?? '';
  const pod = (await checkPods(kc, ns, check)).find((p) => runIdOf(p) === uuid);
  const report = readAcceptedReport(state);
  const last = readLastOutcome(state);
  return {
    recorded: last?.uuid === uuid ? { kind: last.kind, errors: state?.spec.Errors ?? [] } : undefined,
    uuid,
    podUid: pod?.metadata?.uid ?? '',
    reportAtMs: report?.uuid === uuid ? report.atMs : undefined,
    result: resultOf(exit),
    output: `${exit.stdout.slice(-1500)}\n${exit.stderr.slice(-1500)}`,
  };
}

/** When the process kubelet saw each container of the namespace exit, by pod uid (its ms clock). */
async function kubeletExits(): Promise<Map<string, number>> {
  const exits = new Map<string, number>();
  const text = await readFile(join(inject('clusterDir'), 'kubelet.log'), 'utf8');
  for (const line of text.split('\n')) {
    if (!line.includes('"container exited"') || !line.includes(`"pod":"${ns}/`)) continue;
    const event = JSON.parse(line) as { uid?: string; finishedAtMs?: number };
    if (event.uid && typeof event.finishedAtMs === 'number') exits.set(event.uid, event.finishedAtMs);
  }
  return exits;
}

/** The first khstate write of check by the loop `writer` that landed at or after fromMs (ms, audit time). */
function landedAfter(events: AuditEvent[], check: string, writer: string, fromMs: number): number {
  const times = events
    .filter(
      (e) =>
        e.objectRef?.resource === 'khstates' &&
        e.objectRef.name === check &&
        e.verb === 'update' &&
        e.userAgent === `khrun/${writer}` &&
        e.responseStatus?.code === 200,
    )
    .map((e) => Date.parse(e.stageTimestamp))
    .filter((t) => t >= fromMs)
    .sort((a, b) => a - b);
  return times[0] ?? Number.NaN;
}

const load = () => loadavg()[0]?.toFixed(1) ?? '?';
const figures = (values: number[]) =>
  `p50 ${ms(quantile(values, 0.5))}, max ${ms(Math.max(...values))} (n=${values.length})`;

describe(`a checker pod exits: the late-report grace (${LATE_REPORT_GRACE_MS} ms)`, () => {
  it.each([
    ['the runner’s own endpoint', 'own'],
    ['khrun serve (KH_EXTERNAL_REPORTING_URL; the runner sees it through its khstate watch)', 'serve'],
  ] as const)(
    'a report written out just before the exit, to %s: every run recorded as its report',
    async (where, kind) => {
      const check = `report-exit-${kind}`;
      const row = faultScenario(`exit: a checker writes its report out and exits at once; to ${where}`);
      const loadBefore = load();
      await createCheck(kc, ns, check, {
        containers: [nodeContainer(REPORT_AND_EXIT, { env: [{ name: 'NOTICE_URL', value: notices.url }] })],
      });
      let env: Record<string, string> = {};
      if (kind === 'serve') {
        serve ??= await startServe();
        env = { KH_EXTERNAL_REPORTING_URL: serve.url, KHRUN_REPORT_KEY: key };
      }
      const ran: Ran[] = [];
      for (let i = 0; i < REPORTED_RUNS; i++) ran.push(await runOnce(check, env));

      const exits = await kubeletExits();
      const events = await auditEvents(kc, ns);
      const reported = ran.filter((r) => notices.runs.has(r.uuid));
      const asReported = (r: Ran) => r.recorded?.kind === 'Succeeded';
      const recorded = reported.filter(asReported);
      // How far behind the exit the report arrived at its endpoint (negative: before the kubelet saw it), and,
      // at khrun serve, when its store landed: what the grace has to cover.
      const arrivals: number[] = [];
      const stores: number[] = [];
      for (const r of ran) {
        const exitMs = exits.get(r.podUid) ?? Number.NaN;
        if (r.reportAtMs !== undefined) arrivals.push(r.reportAtMs - exitMs);
        // The first store of the report after it arrived at khrun serve is this run's.
        if (kind === 'serve' && r.reportAtMs !== undefined)
          stores.push(landedAfter(events, check, 'report', r.reportAtMs) - exitMs);
      }
      const stored = kind === 'serve' ? `, stored by khrun serve ${figures(stores)} after it` : '';
      await row.record({
        fault: `exit: a checker writes its report out and exits at once, its answer unread; to ${where} (runs one at a time)`,
        runs: ran.length,
        outcome: `${recorded.length} of ${reported.length} runs recorded as their report (Succeeded); the report arrived at its endpoint ${figures(arrivals)} after the process kubelet's exit event (negative: before it)${stored}; load average ${loadBefore} before, ${load()} after`,
        reported: reported.length,
        recorded: recorded.length,
      });
      expect(
        ran
          .filter((r) => !asReported(r))
          .map((r) => `${r.uuid.slice(0, 8)}: ${JSON.stringify(r.result)}\n${r.output}`),
      ).toEqual([]);
      expect(reported).toHaveLength(REPORTED_RUNS);
    },
    600_000,
  );

  it(`a checker that exits without reporting is recorded within ${ms(SILENT_EXIT_BOUND_MS)} of its exit`, async () => {
    const check = 'silent-exit';
    const row = faultScenario('exit: a checker exits 3 without reporting');
    const loadBefore = load();
    await createCheck(kc, ns, check, { containers: [nodeContainer(SILENT_EXIT)] });
    const ran: Ran[] = [];
    for (let i = 0; i < SILENT_RUNS; i++) ran.push(await runOnce(check, {}));

    const exits = await kubeletExits();
    const events = await auditEvents(kc, ns);
    const exited = ran.filter((r) => exits.has(r.podUid));
    const asExited = (r: Ran) =>
      r.recorded?.kind === 'ExecutionError' &&
      /exited without reporting: container check exited with code 3/.test(r.recorded.errors.join());
    const recorded = exited.filter(asExited);
    const exitToRecordedMs = exited.map((r) => {
      const exitMs = exits.get(r.podUid) ?? Number.NaN;
      return landedAfter(events, check, 'record', exitMs) - exitMs;
    });
    await row.record({
      fault: `exit: a checker exits 3 without reporting (runs one at a time; late-report grace ${ms(LATE_REPORT_GRACE_MS)})`,
      runs: ran.length,
      outcome: `${recorded.length} of ${exited.length} recorded as ExecutionError "exited without reporting … code 3"; exit → recorded ${figures(exitToRecordedMs)}, bound ${ms(SILENT_EXIT_BOUND_MS)}: from the process kubelet's exit event (its ms clock) to the API server's audit time of the runner's outcome write; load average ${loadBefore} before, ${load()} after`,
      reported: exited.length,
      recorded: recorded.length,
    });
    expect(ran.filter((r) => !asExited(r)).map((r) => `${JSON.stringify(r.result)}\n${r.output}`)).toEqual(
      [],
    );
    expect(exited).toHaveLength(SILENT_RUNS);
    expect(
      exitToRecordedMs.filter((v) => !(v <= SILENT_EXIT_BOUND_MS)),
      `${exitToRecordedMs.join(', ')} ms; load average ${loadBefore} before, ${load()} after (${availableParallelism()} cores)`,
    ).toEqual([]);
  }, 600_000);
});
