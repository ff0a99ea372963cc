import { afterAll, describe, expect, it } from 'vitest';
import { lambdaDispatcher, runCheckBatchEventFor } from '../../lib/aws/lambda-invoke.ts';
import { ConfigError } from '../../lib/config/config-error.ts';
import { lambdaTickOptions, tickOptions } from '../../lib/config/tick-options.ts';
import { limiter } from '../../lib/core/limit.ts';
import { silentLog } from '../../lib/core/log.ts';
import { WriteConflict } from '../../lib/kube/errors.ts';
import {
  BATCH_CHECKS_ANNOTATION,
  batchJobMetadata,
  runBatchJobSpec,
  runnerJobChecks,
} from '../../lib/schedule/batch-job.ts';
import { planBatches } from '../../lib/schedule/dispatch-due.ts';
import type { Dispatcher } from '../../lib/schedule/dispatcher.ts';
import { type CheckRef, DEFAULT_RUN_JOB_OPTIONS, runJobSpec } from '../../lib/schedule/run-job.ts';
import { readDispatchClaim } from '../../lib/state/dispatch-claim.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { runTick } from '../../lib/tick/tick.ts';
import type { TickKube } from '../../lib/tick/tick-port.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

const MIN = 60_000;
const T0 = Date.parse('2026-01-01T12:00:00Z');
const clock = { nowMs: () => T0 };
let uuids = 0;
const ids = { runUuid: () => `${(++uuids).toString(16).padStart(8, 'a')}-0000-4000-8000-000000000000` };

/**
 * khstates with the API server's compare-and-swap, counting what the tick asks of it: reads, and the most
 * writes in flight at once (each write takes a few turns of the event loop, so concurrency shows).
 */
class FakeStates implements TickKube {
  states = new Map<string, KhState>();
  reads = 0;
  writes = 0;
  inFlight = 0;
  maxInFlight = 0;
  private rv = 100;
  constructor(public checks: KhCheck[]) {}
  async listChecks() {
    return this.checks;
  }
  async listStates() {
    return [...this.states.values()].map((s) => structuredClone(s));
  }
  async readState(namespace: string, name: string) {
    this.reads++;
    const s = this.states.get(`${namespace}/${name}`);
    return s ? structuredClone(s) : null;
  }
  private async store(s: KhState, must: 'absent' | 'current') {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      for (let i = 0; i < 3; i++) await Promise.resolve();
      const key = `${s.metadata.namespace}/${s.metadata.name}`;
      const current = this.states.get(key);
      if (must === 'absent' ? current : current?.metadata.resourceVersion !== s.metadata.resourceVersion)
        throw new WriteConflict(must === 'absent' ? 'AlreadyExists' : 'Conflict');
      this.writes++;
      const stored = structuredClone({
        ...s,
        metadata: { ...s.metadata, resourceVersion: String(++this.rv) },
      });
      this.states.set(key, stored);
      return structuredClone(stored);
    } finally {
      this.inFlight--;
    }
  }
  createState = (s: KhState) => this.store(s, 'absent');
  replaceState = (s: KhState) => this.store(s, 'current');
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

/** n checks whose last run was 10 minutes ago: all due; c00..c(n-1), so sorted order is numeric. */
function dueChecks(n: number): FakeStates {
  const names = Array.from({ length: n }, (_, i) => `c${String(i).padStart(2, '0')}`);
  const kube = new FakeStates(names.map((name) => check(name)));
  for (const name of names) {
    const s = newKhState(name, 'ns');
    s.metadata.resourceVersion = '1';
    s.metadata.annotations = {
      [ANNOTATION.outcome]: JSON.stringify({
        uuid: 'u0',
        kind: 'Succeeded',
        startedAtMs: T0 - 10 * MIN,
        finishedAtMs: T0 - 10 * MIN + 1_000,
        durationMs: 1_000,
      }),
    };
    kube.states.set(`ns/${name}`, s);
  }
  return kube;
}

type Sent = { ref: string; checks: string[] };
function batchDispatcher(fail?: (ref: string) => boolean): Dispatcher & { sent: Sent[] } {
  const sent: Sent[] = [];
  const send = async (ref: string, checks: readonly CheckRef[]) => {
    await Promise.resolve();
    if (fail?.(ref)) throw new Error('jobs.batch "x" is forbidden\nmore');
    sent.push({ ref, checks: checks.map((c) => c.name) });
  };
  return {
    sent,
    refFor: (c, nowMs) => `single-${c.name}-${nowMs}`,
    dispatch: (c, ref) => send(ref, [c]),
    batch: { refFor: (id, nowMs) => `batch-${nowMs}-${id}`, dispatch: (checks, ref) => send(ref, checks) },
  };
}

const tick = (
  kube: FakeStates,
  dispatcher: Dispatcher,
  more: { identity?: string; batchSize?: number; concurrency?: number } = {},
) =>
  runTick(
    { kube, dispatcher, clock, log: silentLog, ids },
    {
      scope: 'all',
      identity: more.identity ?? 'tick-a',
      batchSize: more.batchSize ?? 25,
      concurrency: more.concurrency ?? 32,
    },
  );

describe('planBatches', () => {
  it.each([
    [60, 25, [25, 25, 10]],
    [50, 25, [25, 25]],
    [3, 1, [1, 1, 1]],
    [0, 25, []],
  ])('%i due in batches of %i', (n, size, sizes) => {
    const due = Array.from({ length: n }, (_, i) => i);
    const batches = planBatches(due, size);
    expect(batches.map((b) => b.length)).toEqual(sizes);
    expect(batches.flat()).toEqual(due);
  });
  it('refuses a size below 1', () => {
    expect(() => planBatches([1], 0)).toThrow(RangeError);
  });
});

describe('limiter', () => {
  it('never has more than max tasks running, and runs them all', async () => {
    const limit = limiter(3);
    let running = 0;
    let most = 0;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        limit(async () => {
          running++;
          most = Math.max(most, running);
          for (let k = 0; k < (i % 4) + 1; k++) await Promise.resolve();
          running--;
          return i;
        }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(most).toBe(3);
    expect(limit.active).toBe(0);
  });

  /** A limiter of one slot, held by a task until open() is called. */
  const heldLimiter = <T>(task: (gate: Promise<void>) => Promise<T>) => {
    const limit = limiter(1);
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    return { limit, open, held: limit(() => task(gate)) };
  };

  it('starts a task marked first ahead of those waiting; a rejection frees its slot', async () => {
    const order: string[] = [];
    const { limit, open, held } = heldLimiter(async (gate) => {
      await gate;
      throw new Error('boom');
    });
    const a = limit(async () => order.push('a'));
    const b = limit(async () => order.push('b'));
    const urgent = limit(async () => order.push('urgent'), 'first');
    open();
    await expect(held).rejects.toThrow('boom');
    await Promise.all([a, b, urgent]);
    expect(order).toEqual(['urgent', 'a', 'b']);
  });

  it('starts a task marked last behind every unmarked one, those marked last in their order', async () => {
    const order: string[] = [];
    const { limit, open, held } = heldLimiter((gate) => gate);
    const tasks = [
      limit(async () => order.push('later-1'), 'last'),
      limit(async () => order.push('a'), undefined),
      limit(async () => order.push('later-2'), 'last'),
      limit(async () => order.push('urgent'), 'first'),
      limit(async () => order.push('b')),
    ];
    expect(limit.waiting).toBe(5);
    open();
    await Promise.all([held, ...tasks]);
    expect(order).toEqual(['urgent', 'a', 'b', 'later-1', 'later-2']);
    expect([limit.active, limit.waiting]).toEqual([0, 0]);
  });
});

describe('runTick in batches', () => {
  it('sends no runner before every claim of the tick is written, batches and single runs alike', async () => {
    for (const batchSize of [25, 1]) {
      const kube = dueChecks(60);
      const dispatcher = batchDispatcher();
      const writesAtSend: number[] = [];
      const record =
        <A extends unknown[]>(send: (...a: A) => Promise<void>) =>
        async (...a: A) => {
          writesAtSend.push(kube.writes);
          await send(...a);
        };
      dispatcher.dispatch = record(dispatcher.dispatch);
      dispatcher.batch!.dispatch = record(dispatcher.batch!.dispatch);
      await tick(kube, dispatcher, { concurrency: 8, batchSize });
      expect(writesAtSend.length).toBe(batchSize === 1 ? 60 : 3);
      expect(writesAtSend.every((w) => w === 60)).toBe(true);
    }
  });

  it('60 due checks with batches of 25: 3 invocations, each check claimed once with its batch ref, no read', async () => {
    const kube = dueChecks(60);
    const dispatcher = batchDispatcher();
    const entries = await tick(kube, dispatcher, { concurrency: 8 });
    expect(dispatcher.sent.map((s) => s.checks.length)).toEqual([25, 25, 10]);
    expect(new Set(dispatcher.sent.map((s) => s.ref)).size).toBe(3);
    expect(dispatcher.sent.flatMap((s) => s.checks).sort()).toEqual(kube.checks.map((c) => c.metadata.name));
    // Entries keep the sorted order of the checks.
    expect(entries.map((e) => e.check)).toEqual(kube.checks.map((c) => `ns/${c.metadata.name}`));
    expect(entries.every((e) => e.result === 'dispatched')).toBe(true);
    for (const sent of dispatcher.sent)
      for (const name of sent.checks)
        expect(readDispatchClaim(kube.states.get(`ns/${name}`)!)?.ref).toBe(sent.ref);
    // Each claim is one write on the listed khstate: nothing read first, nothing written twice.
    expect(kube.reads).toBe(0);
    expect(kube.writes).toBe(60);
    expect(kube.maxInFlight).toBe(8);
  });

  it('batch size 1, or a dispatcher without a batch form, sends one invocation per check', async () => {
    for (const [dispatcher, batchSize] of [
      [batchDispatcher(), 1],
      [{ ...batchDispatcher(), batch: undefined }, 25],
    ] as const) {
      const kube = dueChecks(4);
      const d = { ...dispatcher, sent: [] as Sent[] };
      d.dispatch = async (c, ref) => {
        d.sent.push({ ref, checks: [c.name] });
      };
      await tick(kube, d, { batchSize });
      expect(d.sent.map((s) => s.ref)).toEqual(['c00', 'c01', 'c02', 'c03'].map((n) => `single-${n}-${T0}`));
    }
  });

  it('a batch of one planned check is sent as a single run', async () => {
    const kube = dueChecks(26);
    const dispatcher = batchDispatcher();
    await tick(kube, dispatcher);
    const sent = [...dispatcher.sent].sort((x, y) => x.ref.localeCompare(y.ref));
    expect(sent.map((x) => [x.ref.split('-')[0], x.checks.length])).toEqual([
      ['batch', 25],
      ['single', 1],
    ]);
    expect(sent[1]).toEqual({ ref: `single-c25-${T0}`, checks: ['c25'] });
  });

  it('two ticks at once: each check sent once; claim losers drop out of their batch, an empty batch is not sent', async () => {
    const kube = dueChecks(60);
    const a = batchDispatcher();
    const b = batchDispatcher();
    const [ea, eb] = await Promise.all([
      tick(kube, a, { identity: 'tick-a', concurrency: 4 }),
      tick(kube, b, { identity: 'tick-b', concurrency: 4 }),
    ]);
    const sent = [...a.sent, ...b.sent];
    expect(sent.flatMap((s) => s.checks).sort()).toEqual(kube.checks.map((c) => c.metadata.name));
    expect(sent.every((s) => s.checks.length > 0)).toBe(true);
    expect([...ea, ...eb].filter((e) => e.result === 'lost')).toHaveLength(60);
    // Every claim names the invocation that carried its check.
    for (const s of sent)
      for (const name of s.checks) expect(readDispatchClaim(kube.states.get(`ns/${name}`)!)?.ref).toBe(s.ref);
    // A later tick finds nothing due.
    const c = batchDispatcher();
    await tick(kube, c, { identity: 'tick-c' });
    expect(c.sent).toEqual([]);
  });

  it('a failed batch gives every member its claim back; the other batches stand', async () => {
    const kube = dueChecks(60);
    const dispatcher = batchDispatcher((ref) => ref.endsWith('-1'));
    const entries = await tick(kube, dispatcher);
    const failed = entries.filter((e) => e.result === 'failed');
    expect(failed.map((e) => e.check)).toEqual(kube.checks.slice(25, 50).map((c) => `ns/${c.metadata.name}`));
    expect(new Set(failed.map((e) => e.error))).toEqual(new Set(['jobs.batch "x" is forbidden']));
    for (const c of kube.checks.slice(25, 50))
      expect(readDispatchClaim(kube.states.get(`ns/${c.metadata.name}`)!)).toBeUndefined();
    for (const c of [...kube.checks.slice(0, 25), ...kube.checks.slice(50)])
      expect(readDispatchClaim(kube.states.get(`ns/${c.metadata.name}`)!)).toBeDefined();
    // The released checks are due again for the next tick, as one batch.
    const retry = batchDispatcher();
    await tick(kube, retry);
    expect(retry.sent.map((s) => s.checks.length)).toEqual([25]);
  });

  it("a claim's write error fails that check only", async () => {
    const kube = dueChecks(3);
    const replace = kube.replaceState;
    kube.replaceState = async (s) => {
      if (s.metadata.name === 'c01') throw new Error('khstates "c01" is forbidden');
      return replace(s);
    };
    const dispatcher = batchDispatcher();
    const entries = await tick(kube, dispatcher);
    expect(entries.map((e) => e.result)).toEqual(['dispatched', 'failed', 'dispatched']);
    expect(entries[1]?.error).toBe('khstates "c01" is forbidden');
    expect(dispatcher.sent).toEqual([{ ref: expect.stringMatching(/^batch-/), checks: ['c00', 'c02'] }]);
  });
});

describe('the batch Job and the Lambda batch event', () => {
  const template = {
    metadata: { labels: { app: 'khrun' } },
    spec: {
      serviceAccountName: 'khrun-runner',
      containers: [
        {
          name: 'runner',
          image: 'khrun',
          env: [
            { name: 'POD_NAME', value: 'x' },
            { name: 'CHECK_NAME', value: 'stale' },
          ],
        },
      ],
    },
  };
  const checks: CheckRef[] = [
    { namespace: 'a', name: 'dns', timeoutMs: 90_000, runIntervalMs: 600_000 },
    { namespace: 'b', name: 'web', timeoutMs: 300_000, runIntervalMs: 180_000 },
  ];

  it('names its checks in KHRUN_BATCH, bounds the Job by the longest timeout and keeps it the shortest interval', () => {
    const spec = runBatchJobSpec(template, checks, DEFAULT_RUN_JOB_OPTIONS);
    expect(spec).toMatchObject({
      backoffLimit: 0,
      activeDeadlineSeconds: 300 + 120,
      ttlSecondsAfterFinished: 180,
    });
    expect(spec.template.spec?.containers[0]?.env).toEqual([
      { name: 'POD_NAME', value: 'x' },
      { name: 'KHRUN_BATCH', value: '[{"namespace":"a","name":"dns"},{"namespace":"b","name":"web"}]' },
    ]);
    expect(spec.template.metadata?.labels).toEqual({
      app: 'khrun',
      'app.kubernetes.io/managed-by': 'khrun',
      'khrun.dev/batch': 'true',
    });
    expect(() =>
      runBatchJobSpec(template, [{ ...checks[0]!, kind: 'khjob' }], DEFAULT_RUN_JOB_OPTIONS),
    ).toThrow(/khchecks only/);
  });

  it('runnerJobChecks reads the checks of a batch Job and of a single run alike', () => {
    const meta = batchJobMetadata('khrun-batch-x', 'kuberhealthy', checks);
    expect(meta.labels).toMatchObject({ 'app.kubernetes.io/component': 'run', 'khrun.dev/batch': 'true' });
    expect(runnerJobChecks(meta)).toEqual([
      { namespace: 'a', name: 'dns' },
      { namespace: 'b', name: 'web' },
    ]);
    const single = runJobSpec(template, checks[0]!, DEFAULT_RUN_JOB_OPTIONS).template.metadata;
    expect(runnerJobChecks(single)).toEqual([{ namespace: 'a', name: 'dns' }]);
    expect(runnerJobChecks({ annotations: { [BATCH_CHECKS_ANNOTATION]: '{' } })).toEqual([]);
    expect(runnerJobChecks(undefined)).toEqual([]);
  });

  it('the Lambda batch event lists khchecks by kind, namespace and checkName, one asynchronous Invoke per batch', async () => {
    expect(runCheckBatchEventFor(checks)).toEqual({
      checks: [
        { kind: 'khcheck', namespace: 'a', checkName: 'dns' },
        { kind: 'khcheck', namespace: 'b', checkName: 'web' },
      ],
    });
    const sent: Array<{ url: string; type: unknown; body: unknown }> = [];
    const d = lambdaDispatcher({
      functionName: 'khrun-prod-runCheck',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      endpoint: 'http://127.0.0.1:9',
      fetch: async (url, init) => {
        const headers = init?.headers as Record<string, string>;
        sent.push({
          url: String(url),
          type: headers['x-amz-invocation-type'],
          body: JSON.parse(String(init?.body)),
        });
        return new Response('', { status: 202 });
      },
    });
    const ref = d.batch!.refFor('abc123-4', T0);
    expect(ref).toBe(`lambda:khrun-prod-runCheck@${T0 / 1000}#abc123-4`);
    await d.batch!.dispatch(checks, ref);
    expect(sent).toEqual([
      {
        url: 'http://127.0.0.1:9/2015-03-31/functions/khrun-prod-runCheck/invocations',
        type: 'Event',
        body: runCheckBatchEventFor(checks),
      },
    ]);
  });
});

describe('tick options: batch size and concurrency', () => {
  const ctx = kubeconfigFile({ contextNamespace: 'team-a' });
  afterAll(() => ctx.remove());
  const opts = (env: Record<string, string>, flags: Record<string, string> = {}) =>
    tickOptions({ flags, env: { KUBECONFIG: ctx.path, ...env } });

  it('defaults to 25 and 32; the flag wins over the variable; the Lambda reads the variables', () => {
    expect(opts({})).toMatchObject({ batchSize: 50, concurrency: 32 });
    expect(opts({ KHRUN_BATCH_SIZE: '1', KHRUN_TICK_CONCURRENCY: '4' })).toMatchObject({
      batchSize: 1,
      concurrency: 4,
    });
    expect(opts({ KHRUN_BATCH_SIZE: '1' }, { 'batch-size': '50', concurrency: '8' })).toMatchObject({
      batchSize: 50,
      concurrency: 8,
    });
    expect(
      lambdaTickOptions({
        env: {
          KUBECONFIG: ctx.path,
          RUN_CHECK_FUNCTION: 'f',
          AWS_REGION: 'eu-west-1',
          KHRUN_BATCH_SIZE: '10',
        },
      }),
    ).toMatchObject({ batchSize: 10, concurrency: 32 });
  });

  it.each([
    [
      { KHRUN_BATCH_SIZE: '0' },
      /^KHRUN_BATCH_SIZE="0": must be a whole number from 1 to 200; it is the most checks/,
    ],
    [{ KHRUN_BATCH_SIZE: '2.5' }, /^KHRUN_BATCH_SIZE="2.5": must be a whole number/],
    [{ KHRUN_BATCH_SIZE: '201' }, /from 1 to 200/],
    [
      { KHRUN_TICK_CONCURRENCY: 'many' },
      /^KHRUN_TICK_CONCURRENCY="many": must be a whole number from 1 to 256;.*default \(32\)/,
    ],
  ])('refuses %o with a message that says what to give', (env, message) => {
    expect(() => opts(env)).toThrow(ConfigError);
    expect(() => opts(env)).toThrow(message);
  });
});
