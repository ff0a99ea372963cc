import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KH_ENV } from '../../../lib/check/pod-builder.ts';
import { DEFAULT_MAX_CONNECTIONS_PER_SOURCE } from '../../../lib/report/connection-limits.ts';
import { REPORT_PATH } from '../../../lib/report/http-server.ts';
import { readAcceptedReport, readLastOutcome } from '../../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, readState } from '../helpers/khrun.ts';
import { auditEvents } from './helpers/audit.ts';
import { checkerContainer, type Gate, startGate } from './helpers/checker.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { ms, quantile } from './helpers/fault-table.ts';
import { dribble, pool, post, sendHuge } from './helpers/http-abuse.ts';
import {
  checkPods,
  isRunning,
  podEnv,
  runIdOf,
  stateProblems,
  waitForCheckPod,
} from './helpers/invariants.ts';
import { type Runner, resultOf, rssBytes, startRunner, stopRunner } from './helpers/khrun-process.ts';
import { type ReportTally, recordedOf, startReportTally } from './helpers/report-tally.ts';

// Hostile and broken reports against a live runner's report endpoint (the URL its checker pod got in
// KH_REPORTING_URL): each is rejected with the right status, the khstate is not written (its
// resourceVersion does not move), the process stays small, and the endpoint still takes the real report.

const kc = adminKubeConfig();
let ns: string;
let ns2: string;
let gate: Gate;
let tally: ReportTally;
const runners: Runner[] = [];
/** The live run under attack, another check's finished run, another namespace's live run. */
let live: { runner: Runner; pod: V1Pod; url: string; uuid: string };
let old: { uuid: string; url: string };
let other: { uuid: string; url: string };
let elsewhere: { runner: Runner; uuid: string; url: string };
/** Slow senders started once the live run is up; they stay connected while the other tests run. */
let slowSenders: ReturnType<typeof dribble>[] = [];
/** The report server's default request timeout (lib/report/http-server.ts). */
const REQUEST_TIMEOUT_MS = 30_000;
/** Slow senders held open through the tests below, each one connection from 127.0.0.1. */
const SLOW_SENDERS = 20;
// Renewals would move the resourceVersion; a lease as long as the timeout means none during the test.
const QUIET_LEASE = { KHRUN_LEASE_SECONDS: '600' };

/** Runs the check to its end; its run UUID and the reporting URL its (finished) pod was given. */
async function runToEnd(check: string, namespace: string): Promise<{ uuid: string; url: string }> {
  const runner = startRunner(check, namespace);
  runners.push(runner);
  const exit = await runner.done;
  expect(resultOf(exit), exit.stderr).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
  const uuid = (await readState(kc, namespace, check))?.spec.uuid ?? '';
  const pod = (await checkPods(kc, namespace, check)).find((p) => runIdOf(p) === uuid);
  return { uuid, url: (pod && podEnv(pod, KH_ENV.reportingUrl)) ?? '' };
}

async function startLive(check: string, namespace: string, notUuid?: string) {
  const runner = startRunner(check, namespace, QUIET_LEASE);
  runners.push(runner);
  const pod = await waitForCheckPod(
    kc,
    namespace,
    check,
    (p) => isRunning(p) && runIdOf(p) !== notUuid,
    'the live run pod Running',
  );
  return {
    runner,
    pod,
    uuid: podEnv(pod, KH_ENV.runUuid) ?? '',
    url: podEnv(pod, KH_ENV.reportingUrl) ?? '',
  };
}

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-hostile');
  ns2 = await freshNamespace(kc, 'f-hostile-other');
  gate = await startGate(inject('hostIp'));
  tally = await startReportTally(kc, inject('hostIp'));
  const gated = (name: string) => ({
    containers: [checkerContainer({ gateUrl: gate.waitUrl(name), notifyUrl: tally.url(name) })],
  });
  await createCheck(kc, ns, 'other', { containers: [checkerContainer()] });
  await createCheck(kc, ns, 'target', gated('target'), { timeout: '5m' });
  await createCheck(kc, ns2, 'elsewhere', gated('elsewhere'), { timeout: '5m' });
  other = await runToEnd('other', ns);
  gate.open('target');
  old = await runToEnd('target', ns);
  gate.shut('target');
  live = await startLive('target', ns, old.uuid);
  elsewhere = await startLive('elsewhere', ns2);
  slowSenders = Array.from({ length: SLOW_SENDERS }, () =>
    dribble(live.url, { intervalMs: 500, maxMs: 60_000 }),
  );
}, 120_000);

afterAll(async () => {
  for (const r of runners) await stopRunner(r);
  await gate?.close();
  await tally?.close();
  await dropNamespace(kc, ns);
  await dropNamespace(kc, ns2);
});

const rv = async (namespace = ns, check = 'target') =>
  (await readState(kc, namespace, check))?.metadata.resourceVersion;

interface Writes<T> {
  result: T;
  /** How many of the khstates (the target's, the other check's, the other namespace's) fn wrote. */
  written: number;
  before: Array<string | undefined>;
  after: Array<string | undefined>;
}

/** Runs fn and measures whether it wrote a khstate: the target's, the other check's, the other namespace's. */
async function writesDuring<T>(fn: () => Promise<T>): Promise<Writes<T>> {
  const before = [await rv(), await rv(ns, 'other'), await rv(ns2, 'elsewhere')];
  const result = await fn();
  const after = [await rv(), await rv(ns, 'other'), await rv(ns2, 'elsewhere')];
  return { result, written: after.filter((v, i) => v !== before[i]).length, before, after };
}

/** For the row: whether the khstates were written. */
const writtenText = (w: Writes<unknown>) =>
  w.written === 0 ? 'no khstate written (resourceVersions unchanged)' : `${w.written} khstate(s) WRITTEN`;

/** Asserts that nothing was written, saying who wrote what if something was. */
async function expectUntouched(w: Writes<unknown>): Promise<void> {
  expect(w.after, w.written === 0 ? '' : await whoWrote()).toEqual(w.before);
}

/** Who wrote the khstates (the audit log's writers) and what the live runner said of reports: for a failure. */
async function whoWrote(): Promise<string> {
  const writes = [...(await auditEvents(kc, ns)), ...(await auditEvents(kc, ns2))]
    .filter((e) => e.objectRef?.resource === 'khstates' && !['get', 'list', 'watch'].includes(e.verb))
    .map(
      (e) =>
        `${e.requestReceivedTimestamp} ${e.verb} ${e.objectRef?.namespace}/${e.objectRef?.name} ${e.responseStatus?.code} by ${e.user?.username} (${e.userAgent})`,
    );
  const said = live.runner
    .output()
    .split('\n')
    .filter((line) => /report|lease|claim|record/i.test(line));
  return `khstate writes:\n${writes.join('\n')}\nlive runner:\n${said.join('\n')}`;
}

describe('hostile and broken reports against a live run', () => {
  it('rejects malformed, mistyped and incomplete bodies with 400 and the reason', async () => {
    const fault = 'hostile report: malformed JSON, wrong types, missing fields, blank errors, deep nesting';
    const row = faultScenario(fault);
    const cases: Array<[string, string, RegExp]> = [
      ['malformed JSON', '{"OK": tru', /not valid JSON/],
      ['truncated JSON', '{"OK":false,"Errors":["disk', /not valid JSON/],
      ['empty body', '', /body is empty/],
      ['an array', '[{"OK":true}]', /not a JSON object/],
      ['a string', '"OK"', /not a JSON object/],
      ['OK as a string', '{"OK":"yes","Errors":[]}', /must be true or false/],
      ['Errors as a string', '{"OK":false,"Errors":"disk full"}', /must be an array of strings/],
      ['an error that is a number', '{"OK":false,"Errors":[42]}', /must be a string/],
      ['nothing in it', '{}', /"OK" is false but "Errors" is empty/],
      ['OK missing, no errors', '{"Errors":[]}', /"OK" is false but "Errors" is empty/],
      ['OK false, no errors', '{"OK":false,"Errors":[]}', /"OK" is false but "Errors" is empty/],
      ['a blank error', '{"OK":false,"Errors":["   "]}', /empty or only whitespace/],
      ['deep nesting', `{"x":${'['.repeat(20_000)}${']'.repeat(20_000)},"OK":true}`, /nests more than/],
      ['unclosed nesting', '['.repeat(100_000), /not valid JSON/],
    ];
    const w = await writesDuring(() =>
      Promise.all(cases.map(([, body]) => post(live.url, body, { uuid: live.uuid }))),
    );
    const answers = w.result;
    await row.record({
      fault,
      runs: cases.length,
      outcome: `${answers.filter((a) => a.status === 400).length}/${cases.length} rejected with 400 and the reason; ${writtenText(w)}; no genuine report among them, so none to record`,
      reported: 0,
      recorded: 0,
    });
    await expectUntouched(w);
    cases.forEach(([name, , reason], i) => {
      expect(answers[i]?.status, name).toBe(400);
      expect(answers[i]?.text, name).toMatch(reason);
      // Answered at once, although 20 slow senders hold connections meanwhile.
      expect(answers[i]?.ms, name).toBeLessThan(2_000);
    });
  });

  it('rejects replays, other checks, other namespaces and made-up callers, and writes nothing', async () => {
    const fault =
      "hostile report: replayed URL of the previous run, another check's and another namespace's URLs, altered tokens, UUIDs and deadlines, a header naming another run, the bare v2 path";
    const row = faultScenario(fault);
    const valid = '{"OK":true,"Errors":[]}';
    // Each checker pod's KH_REPORTING_URL names its run and carries a token signed by its runner.
    const bare = live.url.slice(0, live.url.indexOf(REPORT_PATH) + REPORT_PATH.length);
    const here = (url: string) => `${new URL(live.url).origin}${new URL(url).pathname}`;
    const segments = new URL(live.url).pathname.split('/');
    const altered = (i: number, value: string) =>
      `${new URL(live.url).origin}${segments.with(i, value).join('/')}`;
    const mac = segments.at(-1) ?? '';
    const cases: Array<[string, string, string | undefined, RegExp]> = [
      ["a replay of the check's previous run, at its URL", here(old.url), old.uuid, /not valid for run/],
      ["another check's finished run, at its URL", here(other.url), other.uuid, /not valid for run/],
      [
        "another namespace's live run, at its URL",
        here(elsewhere.url),
        elsewhere.uuid,
        /not valid for run|is not served/,
      ],
      ['the live URL with the previous run in the header', live.url, old.uuid, /names another run/],
      ['the live URL with a header that is not a UUID', live.url, '../../etc/passwd', /names another run/],
      [
        'the live URL, its token altered',
        // Its first character: the last one's low bits are base64url padding, so some changes there decode
        // to the same MAC and the "altered" token is genuine (about 1 run in 20: this test's old flake).
        altered(segments.length - 1, `${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`),
        undefined,
        /not valid for run/,
      ],
      [
        'the live URL, another run UUID in it',
        altered(segments.length - 3, randomUUID()),
        undefined,
        /not valid for run/,
      ],
      [
        'the live URL, its deadline moved later',
        altered(segments.length - 2, String(Date.now() + 3_600_000)),
        undefined,
        /not valid for run/,
      ],
      ['the bare v2 path with the live run in the header', bare, live.uuid, /only at the signed URL/],
      ['the bare v2 path, no header', bare, undefined, /only at the signed URL/],
      ['a path that is no reporting URL', `${bare}/x/y`, live.uuid, /not one khrun handed out/],
    ];
    const w = await writesDuring(() =>
      Promise.all(cases.map(([, url, uuid]) => post(url, valid, uuid === undefined ? {} : { uuid }))),
    );
    const answers = w.result;
    await row.record({
      fault,
      runs: cases.length,
      outcome: `${answers.filter((a) => a.status === 400).length}/${cases.length} rejected with 400; ${writtenText(w)} (this check's, the other check's, the other namespace's); no genuine report among them`,
      reported: 0,
      recorded: 0,
    });
    await expectUntouched(w);
    cases.forEach(([name, , , reason], i) => {
      expect(answers[i]?.status, name).toBe(400);
      expect(answers[i]?.text, name).toMatch(reason);
    });
  });

  it('refuses 50 MB bodies early, with and without Content-Length, and stays small', async () => {
    const row = faultScenario('hostile report: 50 MB body, with and without Content-Length');
    const size = 50 * 1024 * 1024;
    const baseline = (await rssBytes(live.runner.pid)) ?? 0;
    let peak = baseline;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, (await rssBytes(live.runner.pid)) ?? 0);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const w = await writesDuring(
      async () =>
        [
          // Only the headers: the 400 must come before a single body byte is sent.
          await sendHuge(live.url, size, true, { bodyBytes: 0 }),
          await sendHuge(live.url, size, true),
          await sendHuge(live.url, size, false),
        ] as const,
    );
    const [headersOnly, declared, chunked] = w.result;
    sampling = false;
    await sampler;
    const growthMb = (peak - baseline) / 2 ** 20;
    const how = (r: typeof declared) =>
      `${r.ended === 'answered' ? '400' : 'reset'} after ${ms(r.ms)}, ${(r.sentBytes / 2 ** 20).toFixed(1)} MiB in flight`;
    await row.record({
      fault: 'hostile report: 50 MB body, with and without Content-Length',
      runs: 3,
      outcome: `Content-Length 50 MB, headers only: ${headersOnly.ended === 'answered' ? headersOnly.status : 'reset'} after ${ms(headersOnly.ms)}, ${headersOnly.sentBytes} body bytes sent; streamed with Content-Length: ${how(declared)}; chunked: ${how(chunked)}; runner RSS ${(baseline / 2 ** 20).toFixed(0)} MiB, peak +${growthMb.toFixed(1)} MiB; ${writtenText(w)}`,
      reported: 0,
      recorded: 0,
    });
    await expectUntouched(w);
    expect(headersOnly).toMatchObject({ ended: 'answered', status: 400, sentBytes: 0 });
    expect(headersOnly.text).toMatch(/body of 52428800 bytes is over the 262144-byte limit/);
    for (const r of [declared, chunked]) {
      // Whether the sender still reads the 400 or only sees the connection reset depends on how much
      // it had in flight when the server closed; either way it is stopped after a few MiB.
      if (r.ended === 'answered') {
        expect(r.status).toBe(400);
        expect(r.text).toMatch(/over the 262144-byte limit/);
      }
      expect(r.sentBytes, 'the sender is stopped long before 50 MB').toBeLessThan(8 * 1024 * 1024);
    }
    expect(growthMb, 'RSS growth while refusing 3 × 50 MB').toBeLessThan(40);
  });

  it('survives a flood of bad reports and writes nothing', async () => {
    const row = faultScenario('hostile report: flood of malformed and replayed reports');
    const bodies = ['{"OK":', '{}', '{"OK":false,"Errors":[]}', '[]', 'null'];
    const malformed = 1_500;
    const replays = 300;
    // All of it comes from this machine's address, as the 20 slow senders still held open do, through its own
    // agent of at most inFlight connections: it stays under the per-source connection cap, so every request
    // reaches the handler (the cap itself is connection-flood.test.ts's subject). The earlier tests' idle
    // keep-alive connections are the ones the server evicts to make room.
    const inFlight = DEFAULT_MAX_CONNECTIONS_PER_SOURCE - SLOW_SENDERS - 4;
    const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
    // A request the server cut instead of answering counts as answered with status 0 and the error.
    const send = (body: string, uuid: string) =>
      post(live.url, body, { uuid, agent }).catch((error: unknown) => ({
        status: 0,
        text: String(error),
        ms: 0,
      }));
    const started = performance.now();
    const w = await writesDuring(() =>
      pool(malformed + replays, inFlight, (i) =>
        i < malformed
          ? send(bodies[i % bodies.length] ?? '', live.uuid)
          : send('{"OK":true,"Errors":[]}', old.uuid),
      ),
    ).finally(() => agent.destroy());
    const answers = w.result;
    const seconds = (performance.now() - started) / 1000;
    const latencies = answers.map((a) => a.ms);
    const rss = (await rssBytes(live.runner.pid)) ?? 0;
    const rejected = answers.filter((a) => a.status === 400).length;
    const cut = answers.filter((a) => a.status === 0).length;
    await row.record({
      fault: `hostile report: flood of ${malformed} malformed + ${replays} replayed reports, ${inFlight} in flight`,
      runs: answers.length,
      outcome: `${rejected}/${answers.length} rejected with 400${cut ? `, ${cut} cut without an answer` : ''} at ${Math.round(answers.length / seconds)} requests/s (p50 ${ms(quantile(latencies, 0.5))}, p99 ${ms(quantile(latencies, 0.99))}); ${writtenText(w)}; runner RSS ${(rss / 2 ** 20).toFixed(0)} MiB after`,
      reported: 0,
      recorded: 0,
    });
    await expectUntouched(w);
    expect(answers.filter((a) => a.status !== 400)).toEqual([]);
  }, 60_000);

  it('cut the slow senders off at the request timeout, while everything above was answered', async () => {
    const row = faultScenario('hostile report: slow senders held open through all of the above');
    const w = await writesDuring(() => Promise.all(slowSenders));
    const results = w.result;
    const longest = Math.max(...results.map((r) => r.ms));
    const shortest = Math.min(...results.map((r) => r.ms));
    const cutOff = results.filter((r) => r.ended !== 'gave up').length;
    await row.record({
      fault: `hostile report: ${results.length} slow senders (1 byte every 500 ms) held open through all of the above`,
      runs: results.length,
      outcome: `${cutOff} of ${results.length} cut off ${ms(shortest) === ms(longest) ? ms(longest) : `${ms(shortest)}–${ms(longest)}`} after they started (request timeout ${ms(REQUEST_TIMEOUT_MS)}); ${writtenText(w)} meanwhile`,
      reported: 0,
      recorded: 0,
    });
    await expectUntouched(w);
    for (const r of results) expect(r.ended).not.toBe('gave up');
    expect(shortest).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 500);
    expect(longest, 'cut within a second or two of the request timeout').toBeLessThan(
      REQUEST_TIMEOUT_MS + 2_500,
    );
  }, 60_000);

  it('still accepts the real report afterwards, unicode and control characters stored verbatim', async () => {
    const fault = 'hostile report: unicode and control characters in errors, after all of the above';
    const row = faultScenario(fault);
    const errors = [
      'ünïcødé ✓ 日本語 — 🚀 ZWJ 👩‍👩‍👧',
      'tab\there, newline\nthen CR\r, bell \u0007, escape \u001b[31mred\u001b[0m',
      'zero\u200bwidth and \u202eright-to-left override',
      'quotes " \' and backslash \\ and <html>&amp;',
    ];
    const answer = await post(live.url, JSON.stringify({ OK: false, Errors: errors }), { uuid: live.uuid });
    const accepted = readAcceptedReport(await readState(kc, ns, 'target'));
    // The checker itself now reports too, is refused (only the first report counts) and exits.
    gate.open('target');
    const exit = await live.runner.done;
    const state = await readState(kc, ns, 'target');
    gate.open('elsewhere');
    const other = await elsewhere.runner.done;
    const otherState = await readState(kc, ns2, 'elsewhere');
    // The runs with a genuine report: the target's (this test's report, sent above; its checker's later one
    // is the same run's second report, refused) and the other namespace's (its checker's).
    const reported = [
      ...(answer.status === 200 ? [live.uuid] : []),
      ...tally.runs('elsewhere').filter((run) => run === elsewhere.uuid),
    ];
    const verbatim = JSON.stringify(state?.spec.Errors) === JSON.stringify(errors);
    await row.record({
      fault,
      runs: 2,
      outcome: `answered ${answer.status}; errors stored ${verbatim ? 'verbatim' : 'ALTERED'} in the khstate and recorded as the run’s ${readLastOutcome(state)?.kind} outcome; the other namespace’s run ${readLastOutcome(otherState)?.kind}`,
      reported: reported.length,
      recorded: recordedOf(reported, [readLastOutcome(state)?.uuid, readLastOutcome(otherState)?.uuid]),
    });

    expect(answer.status, answer.status === 200 ? '' : `${answer.text}\n${await whoWrote()}`).toBe(200);
    expect(accepted?.errors).toEqual(errors);
    expect(resultOf(exit), exit.stderr).toMatchObject({ result: 'recorded', kind: 'Failed', errors });
    expect(state?.spec.Errors).toEqual(errors);
    expect(state?.spec.OK).toBe(false);
    expect(stateProblems(state, ns)).toEqual([]);
    expect(readLastOutcome(state)?.uuid).toBe(live.uuid);
    expect(resultOf(other)).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
    expect(reported).toHaveLength(2);
  });
});
