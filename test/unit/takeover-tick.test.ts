import { describe, expect, it } from 'vitest';
import { silentLog } from '../../lib/core/log.ts';
import type { Dispatcher } from '../../lib/schedule/dispatcher.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck, KhState } from '../../lib/state/resources.ts';
import { runTick } from '../../lib/tick/tick.ts';
import type { TickKube } from '../../lib/tick/tick-port.ts';

const T0 = Date.parse('2026-01-01T12:00:00Z');

const check = (name: string): KhCheck =>
  ({
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, creationTimestamp: new Date(T0 - 3_600_000) },
    spec: { runInterval: '1m', timeout: '30s', podSpec: { containers: [{ name: 'c', image: 'i' }] } },
  }) as unknown as KhCheck;

/** v2.7.1 recorded it: its run's uuid and its pod's name, no khrun annotation. */
function kuberhealthys(name: string): KhState {
  const s = newKhState(name, 'ns');
  s.metadata.resourceVersion = '1';
  s.spec = {
    ...s.spec,
    uuid: '11111111-2222-4333-8444-555555555555',
    AuthoritativePod: 'kuberhealthy-7d9f8c6b5d-x2k4z',
  };
  return s;
}

function world(states: KhState[]) {
  const writes: string[] = [];
  const kube: TickKube = {
    listChecks: async () => [check('theirs'), check('ours')],
    listStates: async () => states,
    readState: async (_ns, name) => states.find((s) => s.metadata.name === name) ?? null,
    createState: async (s) => {
      writes.push(s.metadata.name);
      return s;
    },
    replaceState: async (s) => {
      writes.push(s.metadata.name);
      return s;
    },
  };
  const sent: string[] = [];
  const dispatcher: Dispatcher = {
    refFor: (c) => `job-${c.name}`,
    dispatch: async (c) => {
      sent.push(c.name);
    },
  };
  return { deps: { kube, dispatcher, clock: { nowMs: () => T0 }, log: silentLog }, writes, sent };
}

describe('the tick and a running Kuberhealthy', () => {
  it('skips a check Kuberhealthy runs (no claim written, nothing sent) and sends the others', async () => {
    const w = world([kuberhealthys('theirs')]);
    const entries = await runTick(w.deps, { scope: 'all', identity: 'tick' });
    expect(entries.map((e) => [e.check, e.result])).toEqual([
      ['ns/ours', 'dispatched'],
      ['ns/theirs', 'refused'],
    ]);
    expect(entries.find((e) => e.result === 'refused')?.error).toMatch(
      /^Kuberhealthy \(pod kuberhealthy-7d9f8c6b5d-x2k4z/,
    );
    expect(w.writes).toEqual(['ours']);
    expect(w.sent).toEqual(['ours']);
  });

  it('sends it anyway with takeOver (KHRUN_TAKE_OVER=true)', async () => {
    const w = world([kuberhealthys('theirs')]);
    await runTick(w.deps, { scope: 'all', identity: 'tick', takeOver: true });
    expect(w.sent).toEqual(['ours', 'theirs']);
  });
});
