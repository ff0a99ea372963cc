import { describe, expect, it } from 'vitest';
import type { HealthCheck } from '../../lib/healthcheck/resources.ts';
import { WriteConflict } from '../../lib/kube/errors.ts';
import type { NotifyConfig } from '../../lib/notify/config.ts';
import type { HttpSender } from '../../lib/notify/http.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import {
  type NotifyState,
  type QueuedNotification,
  readNotifyState,
  withNotifyState,
} from '../../lib/state/notify-state.ts';
import type { KhState } from '../../lib/state/resources.ts';
import { runTick } from '../../lib/tick/tick.ts';
import type { TickKube } from '../../lib/tick/tick-port.ts';

// The tick's sweep: notifications a runner left in an outbox (killed after its outcome write) are found in
// the khstates and HealthChecks the tick lists anyway, claimed, delivered and marked done.

const T0 = Date.UTC(2026, 11, 3, 12, 0, 0);
const silent = { info() {}, warn() {}, error() {}, debug() {} };

const queued = (id: string, over: Partial<QueuedNotification> = {}): QueuedNotification => ({
  id,
  incident: 'inc',
  event: 'firing',
  kind: 'khcheck',
  outcome: 'Failed',
  severity: 'error',
  run: 'abcdef12',
  failures: 3,
  sinceMs: T0 - 60_000,
  atMs: T0 - 30_000,
  renewMs: 600_000,
  channels: ['hook'],
  attempts: 0,
  nextAtMs: T0 - 30_000,
  lease: { holder: 'dead-runner', untilMs: T0 - 1 },
  ...over,
});

const firing = (outbox: QueuedNotification[]): NotifyState => ({ alert: 'firing', successes: 0, outbox });

function hc(outbox: QueuedNotification[]): HealthCheck {
  return withNotifyState<HealthCheck>(
    {
      apiVersion: 'kuberhealthy.github.io/v2',
      kind: 'HealthCheck',
      metadata: { name: 'web', namespace: 'team', resourceVersion: '7' },
      spec: {
        runInterval: '10m',
        timeout: '1m',
        podSpec: { spec: { containers: [{ name: 'c', image: 'x' }] } },
      },
      status: { ok: false, currentUUID: '', lastRunUnix: Math.floor(T0 / 1000) - 10 },
    },
    firing(outbox),
  );
}

/** khstates and HealthChecks with resourceVersion preconditions, counting writes. */
function world() {
  let rv = 100;
  const states = new Map<string, KhState>();
  const hcs = new Map<string, HealthCheck>();
  const writes: string[] = [];
  const put = <T extends { metadata: { resourceVersion?: string } }>(obj: T): T => ({
    ...obj,
    metadata: { ...obj.metadata, resourceVersion: String(++rv) },
  });
  const kube: TickKube = {
    listChecks: async () => [],
    listStates: async () => [...states.values()].map((s) => structuredClone(s)),
    readState: async (ns, name) => structuredClone(states.get(`${ns}/${name}`) ?? null),
    createState: async () => {
      throw new Error('not expected');
    },
    replaceState: async (s, writer) => {
      const key = `${s.metadata.namespace}/${s.metadata.name}`;
      if (states.get(key)?.metadata.resourceVersion !== s.metadata.resourceVersion)
        throw new WriteConflict('Conflict');
      writes.push(`update khstates ${writer}`);
      const stored = put(s);
      states.set(key, stored);
      return structuredClone(stored);
    },
    listHealthChecks: async () => [...hcs.values()].map((h) => structuredClone(h)),
    healthChecks: {
      get: async (ns, name) => structuredClone(hcs.get(`${ns}/${name}`) ?? null),
      replace: async (h, writer) => {
        const key = `${h.metadata.namespace}/${h.metadata.name}`;
        if (hcs.get(key)?.metadata.resourceVersion !== h.metadata.resourceVersion)
          throw new WriteConflict('Conflict');
        writes.push(`update healthchecks ${writer}`);
        const stored = put(h);
        hcs.set(key, stored);
        return structuredClone(stored);
      },
    },
  };
  return { kube, states, hcs, writes };
}

const config: NotifyConfig = {
  channels: new Map([
    ['hook', { name: 'hook', type: 'webhook', url: 'http://127.0.0.1:9/hook', timeoutMs: 2000 }],
  ]),
  defaults: {},
  namespaceDefaults: false,
  maxDeliveries: 20,
};

const dispatcher = { refFor: () => 'job', dispatch: async () => {}, runsHealthChecks: true };

describe('the tick sweeps outboxes it lists anyway', () => {
  it('delivers what a dead runner left, in khstates and HealthChecks, and marks it done', async () => {
    const w = world();
    const left = withNotifyState(newKhState('dns', 'team'), firing([queued('a')]));
    w.states.set('team/dns', { ...left, metadata: { ...left.metadata, resourceVersion: '5' } });
    w.hcs.set('team/web', hc([queued('b', { kind: 'healthcheck' })]));
    const sent: Array<{ id: string; kind: string }> = [];
    const http: HttpSender = {
      post: async (req) => {
        const body = JSON.parse(req.body);
        sent.push({ id: body.id, kind: body.check.kind });
        return { status: 200, body: '' };
      },
    };
    await runTick(
      { kube: w.kube, dispatcher, clock: { nowMs: () => T0 }, log: silent, notify: { config, http } },
      { scope: 'all', identity: 'tick-1' },
    );
    expect(sent).toEqual([
      { id: 'a', kind: 'khcheck' },
      { id: 'b', kind: 'healthcheck' },
    ]);
    // Per object: the claim, and the done mark.
    expect(w.writes).toEqual([
      'update khstates notify',
      'update khstates notify',
      'update healthchecks notify',
      'update healthchecks notify',
    ]);
    expect(readNotifyState(w.states.get('team/dns'))?.outbox).toEqual([]);
    expect(readNotifyState(w.hcs.get('team/web'))?.outbox).toEqual([]);
  });

  it("holds a held notification while its namespace's window is open (ConfigMap khrun-notifications), read once per namespace, only with namespaceDefaults", async () => {
    const sweep = async (namespaceDefaults: boolean) => {
      const w = world();
      for (const name of ['dns', 'web']) {
        const left = withNotifyState(newKhState(name, 'team'), firing([queued(name, { held: true })]));
        w.states.set(`team/${name}`, { ...left, metadata: { ...left.metadata, resourceVersion: '5' } });
      }
      const reads: string[] = [];
      w.kube.listChecks = async () =>
        ['dns', 'web'].map((name) => ({
          apiVersion: 'comcast.github.io/v1',
          kind: 'KuberhealthyCheck',
          metadata: { name, namespace: 'team' },
          spec: { runInterval: '10m', timeout: '1m', podSpec: { containers: [] } },
        })) as never;
      // A window open at any minute, set only in the namespace's defaults.
      w.kube.readNotifyDefaults = async (namespace) => {
        reads.push(namespace);
        return { maintenance: '* * * * * for 1h' };
      };
      const sent: string[] = [];
      const http: HttpSender = {
        post: async (req) => {
          sent.push(JSON.parse(req.body).id);
          return { status: 200, body: '' };
        },
      };
      await runTick(
        {
          kube: w.kube,
          dispatcher,
          clock: { nowMs: () => T0 },
          log: silent,
          notify: { config: { ...config, namespaceDefaults }, http },
        },
        { scope: 'all', identity: 'tick-1', takeOver: true },
      );
      return { sent, reads };
    };
    expect(await sweep(true)).toEqual({ sent: [], reads: ['team'] });
    // Without namespace defaults the ConfigMap is never read: nothing holds them, so they go out.
    expect(await sweep(false)).toEqual({ sent: ['dns', 'web'], reads: [] });
  });

  it('leaves alone what a live runner holds, and what waits for its backoff: no request at all', async () => {
    const w = world();
    const base = newKhState('dns', 'team');
    const held = withNotifyState(
      base,
      firing([
        queued('a', { lease: { holder: 'live', untilMs: T0 + 5000 } }),
        queued('b', { lease: undefined, nextAtMs: T0 + 1 }),
      ]),
    );
    w.states.set('team/dns', { ...held, metadata: { ...held.metadata, resourceVersion: '5' } });
    const http: HttpSender = { post: async () => Promise.reject(new Error('no request expected')) };
    await runTick(
      { kube: w.kube, dispatcher, clock: { nowMs: () => T0 }, log: silent, notify: { config, http } },
      { scope: 'all', identity: 'tick-1' },
    );
    expect(w.writes).toEqual([]);
  });
});
