import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { invokeAsync, lambdaDispatcher } from '../../lib/aws/lambda-invoke.ts';
import { silentLog } from '../../lib/core/log.ts';
import { WriteConflict } from '../../lib/kube/errors.ts';
import type { Dispatcher } from '../../lib/schedule/dispatcher.ts';
import { DEFAULT_DUE_TIMINGS, decideDue } from '../../lib/schedule/due.ts';
import { type CheckRef, DEFAULT_RUN_JOB_OPTIONS, runJobSpec } from '../../lib/schedule/run-job.ts';
import { DISPATCH_ANNOTATION, readDispatchClaim } from '../../lib/state/dispatch-claim.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { runTick } from '../../lib/tick/tick.ts';
import type { TickKube } from '../../lib/tick/tick-port.ts';

const MIN = 60_000;
const T0 = Date.parse('2026-01-01T12:00:00Z');

function state(annotations: Record<string, unknown>, name = 'c'): KhState {
  const s = newKhState(name, 'ns');
  s.metadata.resourceVersion = '1';
  s.metadata.annotations = Object.fromEntries(
    Object.entries(annotations).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
  );
  return s;
}
const run = (startedAtMs: number, leaseUntilMs: number, deadlineMs: number) => ({
  [ANNOTATION.run]: { uuid: 'u', startedAtMs, deadlineMs, pod: 'p', runner: 'r', leaseUntilMs },
});
const outcome = (startedAtMs: number) => ({
  [ANNOTATION.outcome]: {
    uuid: 'u0',
    kind: 'Succeeded',
    startedAtMs,
    finishedAtMs: startedAtMs + 5_000,
    durationMs: 5_000,
  },
});
const dispatched = (atMs: number) => ({ [DISPATCH_ANNOTATION]: { atMs, ref: 'job-1', by: 'tick-a' } });

describe('decideDue', () => {
  const base = { key: 'uid-1', runIntervalMs: 5 * MIN, createdAtMs: T0 - 60 * MIN };
  it.each([
    ['never ran (created long ago)', null, T0, { due: true, reason: 'never-run' }],
    ['a live run', state(run(T0 - MIN, T0 + 10_000, T0 + 4 * MIN)), T0, { due: false, reason: 'running' }],
    [
      'a run whose runner let go',
      state(run(T0 - MIN, T0 - 1, T0 + 4 * MIN)),
      T0,
      { due: true, reason: 'adopt-abandoned' },
    ],
    [
      'a run past its deadline',
      state(run(T0 - 9 * MIN, T0 - 5 * MIN, T0 - MIN)),
      T0,
      { due: true, reason: 'close-stale' },
    ],
    ['interval not yet passed', state(outcome(T0 - 3 * MIN)), T0, { due: false, reason: 'not-yet' }],
    ['interval passed', state(outcome(T0 - 5 * MIN)), T0, { due: true, reason: 'interval-passed' }],
    [
      'within half a tick of the interval',
      state(outcome(T0 - 5 * MIN + 25_000)),
      T0,
      { due: true, reason: 'interval-passed' },
    ],
    [
      'dispatched, run not started yet',
      state({ ...outcome(T0 - 9 * MIN), ...dispatched(T0 - MIN) }),
      T0,
      { due: false, reason: 'dispatched' },
    ],
    [
      'dispatch expired without a run',
      state({ ...outcome(T0 - 20 * MIN), ...dispatched(T0 - 6 * MIN) }),
      T0,
      { due: true, reason: 'interval-passed' },
    ],
    ['never ran, dispatch pending', state(dispatched(T0 - 10_000)), T0, { due: false, reason: 'dispatched' }],
    [
      'a run adopted after a pending dispatch is not dispatched twice',
      state({ ...run(T0 - 2 * MIN, T0 - 1, T0 + 2 * MIN), ...dispatched(T0 - 30_000) }),
      T0,
      { due: false, reason: 'dispatched' },
    ],
  ])('%s', (_name, s, nowMs, expected) => {
    expect(decideDue({ ...base, state: s, nowMs })).toMatchObject(expected);
  });

  it('anchors on the dispatch that led to the last run, so pod start-up does not make the interval drift', () => {
    // Dispatched at 12:00:00, the runner started 40 s later; the tick at 12:05:00 sends the next run.
    const s = state({ ...dispatched(T0), ...outcome(T0 + 40_000) });
    expect(decideDue({ ...base, state: s, nowMs: T0 + 5 * MIN })).toMatchObject({ due: true });
    expect(decideDue({ ...base, state: s, nowMs: T0 + 4 * MIN })).toMatchObject({
      due: false,
      reason: 'not-yet',
    });
  });

  it('spreads the first runs of checks created together over a stable jitter', () => {
    const created = { ...base, createdAtMs: T0, runIntervalMs: 60 * MIN, state: null };
    const firstDue = (key: string) => {
      const d = decideDue({ ...created, key, nowMs: T0 });
      return d.due ? T0 : d.nextCheckMs;
    };
    const times = Array.from({ length: 20 }, (_, i) => firstDue(`uid-${i}`));
    expect(new Set(times).size).toBeGreaterThan(10);
    for (const t of times) expect(t - T0).toBeLessThan(DEFAULT_DUE_TIMINGS.maxFirstRunJitterMs);
    expect(firstDue('uid-3')).toBe(firstDue('uid-3'));
  });
});

/** A khstate store with the API server's compare-and-swap: replace needs the current resourceVersion. */
class FakeStates implements TickKube {
  states = new Map<string, KhState>();
  private rv = 100;
  constructor(public checks: KhCheck[]) {}
  private clone = (s: KhState) => structuredClone(s);
  async listChecks() {
    return this.checks;
  }
  async listStates() {
    return [...this.states.values()].map(this.clone);
  }
  async readState(namespace: string, name: string) {
    const s = this.states.get(`${namespace}/${name}`);
    return s ? this.clone(s) : null;
  }
  async createState(s: KhState) {
    await Promise.resolve();
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    if (this.states.has(key)) throw new WriteConflict('AlreadyExists');
    const stored = { ...this.clone(s), metadata: { ...s.metadata, resourceVersion: String(++this.rv) } };
    this.states.set(key, stored);
    return this.clone(stored);
  }
  async replaceState(s: KhState) {
    await Promise.resolve();
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    const current = this.states.get(key);
    if (!current || current.metadata.resourceVersion !== s.metadata.resourceVersion)
      throw new WriteConflict('Conflict');
    const stored = { ...this.clone(s), metadata: { ...s.metadata, resourceVersion: String(++this.rv) } };
    this.states.set(key, stored);
    return this.clone(stored);
  }
}

function check(name: string, runInterval = '5m', timeout = '1m'): KhCheck {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyCheck',
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      creationTimestamp: new Date(T0 - 3_600_000) as never,
    },
    spec: { runInterval, timeout, podSpec: { containers: [{ name: 'c', image: 'busybox' }] } },
  };
}

function recordingDispatcher(fail?: (name: string) => boolean): Dispatcher & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    refFor: (c, nowMs) => `khrun-run-${c.name}-${nowMs}`,
    async dispatch(c, ref) {
      await Promise.resolve();
      if (fail?.(c.name)) throw new Error('jobs.batch is forbidden');
      sent.push(`${c.namespace}/${c.name}=${ref}`);
    },
  };
}

const clock = { nowMs: () => T0 };
const template = { spec: { containers: [{ name: 'runner', image: 'khrun' }] } };

describe('runTick', () => {
  it('dispatches due checks only, each with a claim in its khstate', async () => {
    const kube = new FakeStates([check('due'), check('fresh'), check('never')]);
    kube.states.set('ns/due', state(outcome(T0 - 6 * MIN), 'due'));
    kube.states.set('ns/fresh', state(outcome(T0 - MIN), 'fresh'));
    const dispatcher = recordingDispatcher();
    const entries = await runTick(
      { kube, dispatcher, clock, log: silentLog },
      { scope: 'all', identity: 'tick-a' },
    );
    expect(entries.map((e) => [e.check, e.result])).toEqual([
      ['ns/due', 'dispatched'],
      ['ns/fresh', 'not-due'],
      ['ns/never', 'dispatched'],
    ]);
    expect(dispatcher.sent).toEqual([`ns/due=khrun-run-due-${T0}`, `ns/never=khrun-run-never-${T0}`]);
    expect(readDispatchClaim(kube.states.get('ns/never') ?? null)).toEqual({
      atMs: T0,
      ref: `khrun-run-never-${T0}`,
      by: 'tick-a',
    });
    // The claim makes the next tick leave the check alone until a run starts (or the claim expires).
    const again = await runTick(
      { kube, dispatcher, clock, log: silentLog },
      { scope: 'all', identity: 'tick-b' },
    );
    expect(again.filter((e) => e.result === 'dispatched')).toEqual([]);
  });

  it('two ticks at once dispatch each check exactly once', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `c${i}`);
    const kube = new FakeStates(names.map((n) => check(n)));
    for (const n of names.slice(0, 6)) {
      kube.states.set(`ns/${n}`, state(outcome(T0 - 10 * MIN), n));
    }
    const a = recordingDispatcher();
    const b = recordingDispatcher();
    const [ea, eb] = await Promise.all([
      runTick({ kube, dispatcher: a, clock, log: silentLog }, { scope: 'all', identity: 'tick-a' }),
      runTick({ kube, dispatcher: b, clock, log: silentLog }, { scope: 'all', identity: 'tick-b' }),
    ]);
    const sent = [...a.sent, ...b.sent].map((s) => s.split('=')[0]).sort();
    expect(sent).toEqual(names.map((n) => `ns/${n}`).sort());
    expect([...ea, ...eb].filter((e) => e.result === 'lost')).toHaveLength(12);
  });

  it('gives the claim back when the dispatch fails, so the next tick retries', async () => {
    const kube = new FakeStates([check('broken')]);
    const entries = await runTick(
      { kube, dispatcher: recordingDispatcher(() => true), clock, log: silentLog },
      { scope: 'all', identity: 'tick-a' },
    );
    expect(entries[0]).toMatchObject({ result: 'failed', error: 'jobs.batch is forbidden' });
    expect(readDispatchClaim(kube.states.get('ns/broken') ?? null)).toBeUndefined();
  });

  it("sends each check's interval with it, which sizes how long its finished Job stays", async () => {
    const kube = new FakeStates([check('often', '1m'), check('hourly', '1h')]);
    const refs: CheckRef[] = [];
    const dispatcher: Dispatcher = {
      refFor: (c, nowMs) => `khrun-run-${c.name}-${nowMs}`,
      dispatch: async (c) => {
        refs.push(c);
      },
    };
    await runTick({ kube, dispatcher, clock, log: silentLog }, { scope: 'all', identity: 't' });
    const ttl = (name: string) => {
      const ref = refs.find((r) => r.name === name);
      return ref && runJobSpec(template, ref, DEFAULT_RUN_JOB_OPTIONS).ttlSecondsAfterFinished;
    };
    expect(refs.map((r) => [r.name, r.runIntervalMs])).toEqual([
      ['hourly', 3_600_000],
      ['often', 60_000],
    ]);
    expect(ttl('often')).toBe(120);
    expect(ttl('hourly')).toBe(600);
  });

  it('dispatches an invalid khcheck at v2 defaults so its runner records why', async () => {
    const bad = check('bad', 'often');
    bad.spec.podSpec = { containers: [] };
    const kube = new FakeStates([bad]);
    const dispatcher = recordingDispatcher();
    await runTick({ kube, dispatcher, clock, log: silentLog }, { scope: 'all', identity: 't' });
    expect(dispatcher.sent).toHaveLength(1);
  });
});

describe('runJobSpec', () => {
  it('copies the runner template, names the check by env, never retries, and bounds the run', () => {
    const spec = runJobSpec(
      {
        metadata: { labels: { app: 'khrun' } },
        spec: {
          serviceAccountName: 'khrun-runner',
          containers: [
            { name: 'runner', image: 'khrun', args: ['run'], env: [{ name: 'CHECK_NAME', value: 'stale' }] },
          ],
        },
      },
      { namespace: 'team-a', name: 'dns', timeoutMs: 90_000, runIntervalMs: 300_000 },
      DEFAULT_RUN_JOB_OPTIONS,
    );
    expect(spec).toMatchObject({
      backoffLimit: 0,
      activeDeadlineSeconds: 90 + 120,
      // Collected one interval (5 minutes) after it finishes: job-retention.ts.
      ttlSecondsAfterFinished: 300,
      podFailurePolicy: {
        rules: [
          { action: 'FailJob', onExitCodes: { containerName: 'runner', operator: 'In', values: [2] } },
          { action: 'Ignore' },
        ],
      },
    });
    expect(spec.template.spec?.restartPolicy).toBe('Never');
    expect(spec.template.spec?.serviceAccountName).toBe('khrun-runner');
    expect(spec.template.spec?.containers[0]?.env).toEqual([
      { name: 'CHECK_NAME', value: 'dns' },
      { name: 'CHECK_NAMESPACE', value: 'team-a' },
    ]);
    expect(spec.template.metadata?.labels).toMatchObject({
      app: 'khrun',
      'app.kubernetes.io/managed-by': 'khrun',
      'khrun.dev/check': 'dns',
    });
  });
});

describe('Lambda dispatch', () => {
  it('sends an asynchronous, SigV4-signed Invoke with the runCheck event', async () => {
    const seen: Array<{ url?: string; headers: Record<string, unknown>; body: string }> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c;
      });
      req.on('end', () => {
        seen.push({ url: req.url, headers: req.headers, body });
        res.writeHead(202, { 'x-amzn-RequestId': 'req-1' });
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
      const id = await invokeAsync(
        { functionName: 'khrun-prod-runCheck', region: 'eu-west-1', credentials, endpoint },
        { checkName: 'dns', namespace: 'kuberhealthy' },
      );
      expect(id).toBe('req-1');
      const d = lambdaDispatcher({
        functionName: 'khrun-prod-runCheck',
        region: 'eu-west-1',
        credentials,
        endpoint,
      });
      expect(d.refFor({ namespace: 'a', name: 'b', timeoutMs: 1 }, T0)).toBe(
        `lambda:khrun-prod-runCheck@${T0 / 1000}`,
      );
      const [req] = seen;
      expect(req?.url).toBe('/2015-03-31/functions/khrun-prod-runCheck/invocations');
      expect(req?.headers['x-amz-invocation-type']).toBe('Event');
      expect(String(req?.headers.authorization)).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/lambda\/aws4_request, SignedHeaders=[^,]*x-amz-invocation-type[^,]*, Signature=[0-9a-f]{64}$/,
      );
      expect(JSON.parse(req?.body ?? '')).toEqual({ checkName: 'dns', namespace: 'kuberhealthy' });
    } finally {
      server.close();
    }
  });
});
