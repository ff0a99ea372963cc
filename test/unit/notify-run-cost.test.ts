import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { updateKhStateWithRetry } from '../../lib/kube/cas.ts';
import type { NotifyConfig } from '../../lib/notify/config.ts';
import type { HttpSender } from '../../lib/notify/http.ts';
import { createNotifier } from '../../lib/notify/notifier.ts';
import { runNotifier } from '../../lib/notify/run-notifier.ts';
import { sweepItem, sweepOutboxes } from '../../lib/notify/sweep.ts';
import { handleReport, type ReportDeps } from '../../lib/report/handle-report.ts';
import type { AcquireDeps } from '../../lib/run/acquire-deps.ts';
import { type IterationConfig, runIteration } from '../../lib/run/iteration.ts';
import { reportInbox } from '../../lib/run/report-inbox.ts';
import { type ActiveRun, readActiveRun } from '../../lib/state/khstate.ts';
import { readNotifyState } from '../../lib/state/notify-state.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { FakeKube } from './fakes/fake-kube.ts';

// What notifications cost the API server (FakeKube.requests names each call as the audit log would): the
// decision rides on the outcome's own write, so a run with no transition makes no request more than a
// run without notifications; a transition adds one write (the delivery marked done) and one request to
// each receiver. Counted, with the runs' own requests as the baseline, in the same harness as
// run-cost.test.ts.

const NS = 'checks';
const NAME = 'dns';
const T0 = Date.UTC(2026, 11, 3, 10, 0, 0);
const silent = { info() {}, warn() {}, error() {}, debug() {} };

function khcheck(annotations: Record<string, string>): KhCheck {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyCheck',
    metadata: { name: NAME, namespace: NS, uid: 'uid-dns', annotations },
    spec: { runInterval: '10m', timeout: '2m', podSpec: { containers: [{ name: 'main', image: 'img' }] } },
  };
}

const config = (over: Partial<NotifyConfig> = {}): NotifyConfig => ({
  channels: new Map([
    ['hook', { name: 'hook', type: 'webhook', url: 'http://127.0.0.1:9/hook', timeoutMs: 2000 }],
  ]),
  defaults: {},
  namespaceDefaults: false,
  maxDeliveries: 20,
  ...over,
});

/** A receiver: every request it got, and whether it answers (else: connection refused). */
function receiver() {
  const got: Array<{ url: string; event: string; id: string }> = [];
  let up = true;
  const http: HttpSender = {
    async post(req) {
      if (!up) throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
      got.push({ url: req.url, event: JSON.parse(req.body).event, id: req.headers['idempotency-key'] ?? '' });
      return { status: 200, body: 'ok' };
    },
  };
  return { http, got, down: () => (up = false), up: () => (up = true) };
}

let invocation = 0;

/** One invocation of `khrun run` whose checker pod reports ok or not, over kube; returns its requests. */
async function invoke(kube: FakeKube, ok: boolean, notify?: { config: NotifyConfig; http: HttpSender }) {
  kube.requests.length = 0;
  const holder = `runner-a/invocation-${++invocation}`;
  const clock = { nowMs: () => Date.now() };
  const inbox = reportInbox();
  const deps: AcquireDeps = {
    kube,
    clock,
    ids: { runUuid: () => `00000000-0000-4000-8000-${String(invocation).padStart(12, '0')}` },
    log: silent,
    ...(notify
      ? {
          notify: runNotifier(
            createNotifier(notify.config, {
              http: notify.http,
              clock,
              log: silent,
              readDefaults: async () => {
                kube.requests.push('get configmaps');
                return { 'failure-threshold': '3' };
              },
            }),
            'khcheck',
            kube,
          ),
        }
      : {}),
  };
  const endpoint: ReportDeps = {
    lookup: { podsByRunId: async () => [], livePodsByIp: async () => [] },
    state: { read: (ns, name) => kube.readState(ns, name), replace: (s) => kube.replaceState(s) },
    clock,
    log: silent,
    server: 'runner-a',
    deliver: inbox.deliver,
  };
  const cfg: IterationConfig = {
    namespace: NS,
    checkName: NAME,
    runner: 'runner-a',
    holder,
    hostsReports: true,
    reportingUrl: 'http://10.0.0.1:8080/externalCheckStatus',
    inbox,
    signal: new AbortController().signal,
  };
  const running = runIteration(deps, cfg);
  await kube.until(() => kube.watching === 1);
  const run = readActiveRun(kube.state(NS, NAME) ?? null) as ActiveRun;
  const answer = await handleReport(endpoint, {
    method: 'POST',
    caller: {
      via: 'signed',
      run: { namespace: NS, checkName: NAME, uuid: run.uuid, deadlineMs: run.deadlineMs },
    },
    body: JSON.stringify({ OK: ok, Errors: ok ? [] : ['dns lookup failed'] }),
  });
  expect(answer.status).toBe(200);
  kube.setPodStatus(NS, run.pod, { phase: 'Succeeded' });
  expect(await running).toMatchObject({ kind: 'recorded' });
  await vi.advanceTimersByTimeAsync(10 * 60_000);
  return [...kube.requests];
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => vi.useRealTimers());

const POLICY = { 'notify.khrun.dev/failure-threshold': '3', 'notify.khrun.dev/channels': 'hook' };

describe('the API cost of notifications', () => {
  it('is nothing on runs with no transition, one write on a transition; one alert, one resolution', async () => {
    const base = new FakeKube();
    base.putCheck(khcheck(POLICY));
    const kube = new FakeKube();
    kube.putCheck(khcheck(POLICY));
    const r = receiver();
    const notify = { config: config(), http: r.http };
    const plan = [false, false, false, false, true, true];
    const added: number[] = [];
    for (const ok of plan) {
      const without = await invoke(base, ok);
      const withNotify = await invoke(kube, ok, notify);
      added.push(withNotify.length - without.length);
      if (withNotify.length !== without.length) expect(withNotify).toEqual([...without, 'update khstates']);
      else expect(withNotify).toEqual(without);
    }
    // Failures 1 and 2: nothing; 3: fires (the done-mark); 4: renewal at Alertmanager only (none here);
    // the success resolves (the done-mark); the next success: nothing.
    expect(added).toEqual([0, 0, 1, 0, 1, 0]);
    expect(r.got.map((g) => g.event)).toEqual(['firing', 'resolved']);
    expect(readNotifyState(kube.state(NS, NAME))).toMatchObject({ alert: 'ok', outbox: [] });
  });

  it('reads the namespace defaults once per invocation that needs a policy, when they are enabled', async () => {
    const kube = new FakeKube();
    kube.putCheck(khcheck({ 'notify.khrun.dev/channels': 'hook' }));
    const notify = { config: config({ namespaceDefaults: true }), http: receiver().http };
    expect((await invoke(kube, true, notify)).filter((q) => q === 'get configmaps')).toHaveLength(0);
    expect((await invoke(kube, false, notify)).filter((q) => q === 'get configmaps')).toHaveLength(1);
  });

  it('never blocks recording: a receiver down loses nothing, the next invocation delivers it', async () => {
    const kube = new FakeKube();
    kube.putCheck(khcheck(POLICY));
    const r = receiver();
    const notify = { config: config(), http: r.http };
    r.down();
    for (let i = 0; i < 3; i++) await invoke(kube, false, notify);
    const pending = readNotifyState(kube.state(NS, NAME));
    expect(pending?.outbox).toMatchObject([
      { event: 'firing', attempts: 1, lastError: 'hook: ECONNREFUSED' },
    ]);
    expect(kube.state(NS, NAME)?.spec.OK).toBe(false);
    r.up();
    // The backoff (30 s) has passed by the next run (10 min later): its outcome write leases the entry.
    await invoke(kube, false, notify);
    expect(r.got.map((g) => g.event)).toEqual(['firing']);
    expect(readNotifyState(kube.state(NS, NAME))?.outbox).toEqual([]);
  });

  it('a runner killed after its outcome write: the tick sweeps the outbox, once its lease lapsed', async () => {
    const kube = new FakeKube();
    kube.putCheck(khcheck(POLICY));
    const r = receiver();
    const notify = { config: config(), http: r.http };
    for (let i = 0; i < 2; i++) await invoke(kube, false, notify);
    // The third invocation's delivery never happens: its receiver hangs up, as a SIGKILL would leave it.
    const dead: HttpSender = { post: () => new Promise(() => {}) };
    const third = invoke(kube, false, { config: config(), http: dead });
    await vi.advanceTimersByTimeAsync(1000);
    void third;
    const left = readNotifyState(kube.state(NS, NAME));
    expect(left?.outbox).toMatchObject([
      { event: 'firing', lease: { holder: `runner-a/invocation-${invocation}` } },
    ]);
    const sweep = (nowMs: number) => {
      vi.setSystemTime(nowMs);
      const listed = kube.state(NS, NAME) as KhState;
      return sweepOutboxes(
        { config: config(), http: r.http, clock: { nowMs: () => Date.now() }, log: silent },
        [
          sweepItem<KhState>(listed, {
            update: (loop) => updateKhStateWithRetry(kube, listed.metadata, loop),
          }),
        ],
        'tick-1',
      );
    };
    // Within the lease: not the tick's to take.
    expect(await sweep(Date.now())).toEqual({ claimed: 0, requests: 0 });
    const untilMs = left?.outbox[0]?.lease?.untilMs ?? 0;
    kube.requests.length = 0;
    expect(await sweep(untilMs)).toEqual({ claimed: 1, requests: 1 });
    expect(kube.requests).toEqual(['update khstates', 'update khstates']);
    expect(r.got.map((g) => g.event)).toEqual(['firing']);
    expect(readNotifyState(kube.state(NS, NAME))?.outbox).toEqual([]);
  });
});
