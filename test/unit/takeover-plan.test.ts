import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  type Confirmation,
  confirmationOf,
  handbackCommand,
  takeoverCommand,
} from '../../lib/commands/takeover.ts';
import { silentLog } from '../../lib/core/log.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhCheck } from '../../lib/state/resources.ts';
import { planHandBack, planTakeOver } from '../../lib/takeover/plan.ts';
import { takeOver } from '../../lib/takeover/take-over.ts';
import { FakeTakeoverKube } from './fakes/fake-takeover-kube.ts';

// `takeover --dry-run` and `handback --dry-run` decide with the functions the real commands use, over the
// same reads, and write nothing; the real commands go ahead only with --yes or a "y" at the terminal's
// question, and without either (a script, CI) refuse before reading anything: exit 2.

const KH_UUID = '11111111-2222-4333-8444-555555555555';
const NOW_MS = 1_700_000_000_000;

function world() {
  const kube = new FakeTakeoverKube();
  for (const [ns, name] of [
    ['a', 'one'],
    ['b', 'two'],
  ] as const) {
    kube.putCheck({ metadata: { namespace: ns, name }, spec: {} } as unknown as KhCheck);
    const s = newKhState(name, ns);
    s.spec = { ...s.spec, OK: true, AuthoritativePod: 'kuberhealthy-7d9f8c6b5d-x2k4z', uuid: KH_UUID };
    kube.putState(s);
  }
  kube.putPod({
    metadata: {
      name: 'one-1700',
      namespace: 'a',
      labels: { 'kuberhealthy-check-name': 'one', 'kuberhealthy-run-id': KH_UUID },
    },
    status: { phase: 'Running' },
  } as V1Pod);
  kube.endPods();
  return kube;
}

const deps = (kube: FakeTakeoverKube) => ({ kube, clock: { nowMs: () => NOW_MS }, log: silentLog });

/** The writes a fake saw: steps (scale, khstate writes) and pod removals. */
const writes = (kube: FakeTakeoverKube) => ({ steps: [...kube.steps], removed: kube.calls.removePod });

async function command(
  which: 'takeover' | 'handback',
  kube: FakeTakeoverKube,
  confirmation: Confirmation,
  output: 'text' | 'json' | 'yaml' = 'text',
) {
  const out: string[] = [];
  const err: string[] = [];
  const common = {
    ...deps(kube),
    signal: new AbortController().signal,
    output,
    write: (l: string) => out.push(l),
    warn: (l: string) => err.push(l),
    confirmation,
  };
  const code =
    which === 'takeover'
      ? await takeoverCommand({ ...common, podsGoneTimeoutMs: 1_000 })
      : await handbackCommand(common);
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('the plan is what the command then does', () => {
  it('takeover: the same checks adopted and runs stopped, and the plan writes nothing', async () => {
    const kube = world();
    const plan = await planTakeOver(deps(kube), {});
    expect(writes(kube)).toEqual({ steps: [], removed: 0 });
    expect(plan).toMatchObject({
      kind: 'plan',
      replicas: 2,
      takeOver: ['a/one', 'b/two'],
      inFlight: [{ check: 'a/one', pods: 1 }],
      unchanged: [],
    });
    const done = await takeOver(deps(kube), {
      podsGoneTimeoutMs: 1_000,
      signal: new AbortController().signal,
    });
    expect(done).toMatchObject({ kind: 'taken-over', adopted: ['a/one', 'b/two'], closedRuns: ['a/one'] });
    // Once taken over, the plan says there is nothing left to do.
    expect(await planTakeOver(deps(kube), {})).toMatchObject({ takeOver: [], unchanged: ['a/one', 'b/two'] });
  });

  it('handback: the checks given back and the replicas restored, nothing written', async () => {
    const kube = world();
    await takeOver(deps(kube), { podsGoneTimeoutMs: 1_000, signal: new AbortController().signal });
    kube.steps.length = 0;
    expect(await planHandBack(deps(kube), {})).toMatchObject({
      kind: 'plan',
      replicas: 2,
      handBack: ['a/one', 'b/two'],
      waitFor: [],
    });
    expect(await planHandBack(deps(kube), { replicas: 5 })).toMatchObject({ replicas: 5 });
    expect(writes(kube).steps).toEqual([]);
  });

  it('no Kuberhealthy to act on: not-found, with the message the command prints', async () => {
    const kube = world();
    expect(await planHandBack(deps(kube), {})).toMatchObject({
      kind: 'not-found',
      message: expect.stringMatching(/no Kuberhealthy taken over by khrun found/),
    });
    expect(await planTakeOver(deps(kube), { from: 'x/y' })).toMatchObject({ kind: 'not-found' });
  });
});

describe('takeover and handback --dry-run', () => {
  it('text: what would change, then that nothing was', async () => {
    const kube = world();
    const r = await command('takeover', kube, { kind: 'dry-run' });
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')).toEqual([
      'khrun takeover would scale Deployment kuberhealthy/kuberhealthy (Kuberhealthy v2) from 2 replicas to 0 and wait for its pods to be gone, then take over 2 khstates; khrun runs those checks from then on (each due at once):',
      '  a/one (its run in flight stopped: 1 checker pod removed)',
      '  b/two',
      'Nothing was changed (--dry-run).',
    ]);
    expect(r.stderr).toBe('');
    expect(writes(kube)).toEqual({ steps: [], removed: 0 });
  });

  it.each(['json', 'yaml'] as const)('-o %s: only the document', async (output) => {
    const kube = world();
    const r = await command('takeover', kube, { kind: 'dry-run' }, output);
    const doc = output === 'json' ? JSON.parse(r.stdout) : parse(r.stdout);
    expect(doc).toEqual({
      dryRun: true,
      kuberhealthy: 'kuberhealthy/kuberhealthy',
      line: 'v2',
      replicas: { from: 2, to: 0 },
      takeOver: ['a/one', 'b/two'],
      inFlight: [{ check: 'a/one', pods: 1 }],
      unchanged: [],
    });
    expect(writes(kube)).toEqual({ steps: [], removed: 0 });
  });

  it('handback -o json: the document; nothing written', async () => {
    const kube = world();
    await takeOver(deps(kube), { podsGoneTimeoutMs: 1_000, signal: new AbortController().signal });
    kube.steps.length = 0;
    const r = await command('handback', kube, { kind: 'dry-run' }, 'json');
    expect(JSON.parse(r.stdout)).toEqual({
      dryRun: true,
      kuberhealthy: 'kuberhealthy/kuberhealthy',
      line: 'v2',
      replicas: { from: 0, to: 2 },
      handBack: ['a/one', 'b/two'],
      waitFor: [],
    });
    expect(kube.steps).toEqual([]);
  });
});

describe('confirmation', () => {
  it.each([
    [{ dryRun: true, yes: true, ask: undefined }, 'dry-run'],
    [{ dryRun: false, yes: true, ask: async () => false }, 'confirmed'],
    [{ dryRun: false, yes: false, ask: async () => true }, 'ask'],
    [{ dryRun: false, yes: false, ask: undefined }, 'unconfirmed'],
  ])('%j → %s', (input, kind) => {
    expect(confirmationOf(input).kind).toBe(kind);
  });

  it.each(['takeover', 'handback'] as const)(
    '%s without --yes and without a terminal: exit 2 before anything is read, saying to pass --yes',
    async (which) => {
      const kube = world();
      let listed = 0;
      kube.listDeployments = async () => {
        listed++;
        return [];
      };
      const r = await command(which, kube, { kind: 'unconfirmed' });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        new RegExp(
          `^khrun: ${which} .*: pass --yes to go ahead \\(or --dry-run to see what would change\\); nothing was changed$`,
        ),
      );
      expect(listed).toBe(0);
    },
  );

  it('a terminal: the plan and the question on stderr; "no" changes nothing (exit 2), "y" goes ahead', async () => {
    const kube = world();
    const questions: string[] = [];
    const no = await command('takeover', kube, {
      kind: 'ask',
      ask: async (q) => {
        questions.push(q);
        return false;
      },
    });
    expect(no.code).toBe(2);
    expect(no.stdout).toBe('');
    expect(no.stderr).toMatch(/^khrun takeover would scale Deployment kuberhealthy\/kuberhealthy/);
    expect(no.stderr.split('\n').at(-1)).toBe('khrun: takeover: not confirmed; nothing was changed');
    expect(questions).toEqual(['Take over from kuberhealthy/kuberhealthy? [y/N] ']);
    expect(writes(kube)).toEqual({ steps: [], removed: 0 });

    const yes = await command('takeover', kube, { kind: 'ask', ask: async () => true }, 'json');
    expect(yes.code).toBe(0);
    expect(JSON.parse(yes.stdout)).toMatchObject({ result: 'taken-over', adopted: ['a/one', 'b/two'] });
    expect(kube.steps[0]).toBe('scale 0');
  });
});
