import { describe, expect, it } from 'vitest';
import { decideJobStep, JOB_RUNNER_ANNOTATION } from '../../lib/job/decide.ts';
import { decideJobDue } from '../../lib/job/due.ts';
import { jobAsCheck, type KhJob, phaseOf } from '../../lib/job/khjob.ts';
import { nextPhase } from '../../lib/job/phase.ts';
import { type ActiveRun, ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

const NS = 'jobs';
const UID = '0e5b7c8a-1d2f-4a6b-9c3d-5e7f9a1b3c5d';
const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const CREATED = new Date(T0 - 60_000).toISOString();

function khjob(spec: Partial<KhJob['spec']> = {}, annotations?: Record<string, string>): KhJob {
  return {
    apiVersion: 'comcast.github.io/v1',
    kind: 'KuberhealthyJob',
    metadata: {
      name: 'once',
      namespace: NS,
      uid: UID,
      creationTimestamp: CREATED as never,
      ...(annotations ? { annotations } : {}),
    },
    spec: { timeout: '2m', podSpec: { containers: [{ name: 'main', image: 'x' }] }, ...spec },
  };
}

const run = (over: Partial<ActiveRun> = {}): ActiveRun => ({
  uuid: UID,
  startedAtMs: T0 - 10_000,
  deadlineMs: T0 + 110_000,
  pod: 'once-1',
  runner: 'r',
  holder: 'r/1',
  leaseUntilMs: T0 + 20_000,
  ...over,
});

function state(annotations: Record<string, unknown>): KhState {
  const s = newKhState('once', NS);
  for (const [k, v] of Object.entries(annotations)) s.metadata.annotations![k] = JSON.stringify(v);
  return s;
}
const outcome = (uuid: string) => ({
  uuid,
  kind: 'Succeeded',
  startedAtMs: T0 - 50_000,
  finishedAtMs: T0 - 40_000,
  durationMs: 10_000,
});
const KHRUN_RUNNING = { [JOB_RUNNER_ANNOTATION]: 'runner-a' };

describe('decideJobStep: one khjob, one run', () => {
  it.each([
    { name: 'new, no khstate', job: khjob(), state: null, want: 'run' },
    {
      name: 'its run recorded',
      job: khjob({ phase: 'Running' }, KHRUN_RUNNING),
      state: state({ [ANNOTATION.outcome]: outcome(UID) }),
      want: 'ran',
    },
    { name: 'Completed (v2 ran it)', job: khjob({ phase: 'Completed' }), state: null, want: 'ran' },
    {
      name: 'an earlier khjob of the name ran',
      job: khjob(),
      state: state({ [ANNOTATION.outcome]: outcome('other') }),
      want: 'run',
    },
    {
      name: 'its run live',
      job: khjob({ phase: 'Running' }, KHRUN_RUNNING),
      state: state({ [ANNOTATION.run]: run() }),
      want: 'run',
    },
    {
      name: 'its run past the deadline',
      job: khjob({ phase: 'Running' }, KHRUN_RUNNING),
      state: state({ [ANNOTATION.run]: run({ deadlineMs: T0 }) }),
      want: 'close-stale',
    },
    { name: "v2's Running", job: khjob({ phase: 'Running' }), state: null, want: 'foreign' },
    {
      name: "khrun's Running, runner killed before the claim",
      job: khjob({ phase: 'Running' }, KHRUN_RUNNING),
      state: null,
      want: 'run',
    },
  ])('$name → $want', ({ job, state: s, want }) => {
    expect(decideJobStep(job, s, T0).kind).toBe(want);
  });
});

describe('decideJobDue: what the tick sends for a khjob', () => {
  const TIMINGS = { tickPeriodMs: 60_000, dispatchTtlMs: 300_000, maxFirstRunJitterMs: 60_000 };
  const dispatched = (atMs: number) => ({
    [ANNOTATION.dispatch]: { atMs, ref: 'khrun-job-once-x', by: 't' },
  });
  it.each([
    { name: 'new khjob: at once', job: khjob(), s: null, want: { due: true, reason: 'never-run' } },
    {
      name: 'dispatched, not yet started',
      job: khjob(),
      s: state(dispatched(T0 - 1000)),
      want: { due: false, reason: 'dispatched' },
    },
    {
      name: 'dispatch expired',
      job: khjob(),
      s: state(dispatched(T0 - 400_000)),
      want: { due: true, reason: 'never-run' },
    },
    {
      name: "an earlier khjob's dispatch",
      job: khjob(),
      s: state(dispatched(T0 - 120_000)),
      want: { due: true, reason: 'never-run' },
    },
    {
      name: 'live run',
      job: khjob({ phase: 'Running' }, KHRUN_RUNNING),
      s: state({ [ANNOTATION.run]: run() }),
      want: { due: false, reason: 'running' },
    },
    {
      name: 'abandoned run',
      job: khjob({ phase: 'Running' }, KHRUN_RUNNING),
      s: state({ [ANNOTATION.run]: run({ leaseUntilMs: T0 - 1 }) }),
      want: { due: true, reason: 'adopt-abandoned' },
    },
    {
      name: 'stale run',
      job: khjob({ phase: 'Running' }, KHRUN_RUNNING),
      s: state({ [ANNOTATION.run]: run({ deadlineMs: T0 - 1, leaseUntilMs: T0 - 1 }) }),
      want: { due: true, reason: 'close-stale' },
    },
  ])('$name', ({ job, s, want }) => {
    expect(decideJobDue(job, s, T0, TIMINGS)).toMatchObject(want);
  });
  it.each([
    {
      name: 'ran',
      job: khjob({ phase: 'Running' }, KHRUN_RUNNING),
      s: state({ [ANNOTATION.outcome]: outcome(UID) }),
    },
    { name: 'Completed', job: khjob({ phase: 'Completed' }), s: null },
    { name: "v2's Running", job: khjob({ phase: 'Running' }), s: null },
  ])('$name: never due again, not listed', ({ job, s }) => {
    expect(decideJobDue(job, s, T0, TIMINGS)).toBeUndefined();
  });
});

describe('nextPhase: forward only, as v2 writes it', () => {
  const to = (phase: 'Running' | 'Completed') => ({ uid: UID, phase, runner: 'runner-a' });
  it("new → Running, marked as khrun's", () => {
    const next = nextPhase(khjob(), to('Running'));
    expect(next?.spec.phase).toBe('Running');
    expect(next?.metadata.annotations?.[JOB_RUNNER_ANNOTATION]).toBe('runner-a');
  });
  it('Running → Completed, keeping labels and annotations (v2 dropped them)', () => {
    const job = { ...khjob({ phase: 'Running' }, KHRUN_RUNNING) };
    job.metadata.labels = { team: 'a' };
    const next = nextPhase(job, to('Completed'));
    expect(next?.spec.phase).toBe('Completed');
    expect(next?.metadata.labels).toEqual({ team: 'a' });
  });
  it.each([
    { name: 'Completed never goes back', job: khjob({ phase: 'Completed' }), phase: 'Running' as const },
    { name: 'already Running', job: khjob({ phase: 'Running' }), phase: 'Running' as const },
    { name: 'already Completed', job: khjob({ phase: 'Completed' }), phase: 'Completed' as const },
    {
      name: 'another khjob of the name',
      job: { ...khjob(), metadata: { ...khjob().metadata, uid: 'new' } },
      phase: 'Completed' as const,
    },
  ])('$name: nothing to write', ({ job, phase }) => {
    expect(nextPhase(job, to(phase))).toBeUndefined();
  });
});

describe('the khjob as the engine sees it', () => {
  it('is the khcheck it would be: pod spec, timeout, extras; no phase, no interval', () => {
    const check = jobAsCheck(khjob({ phase: 'Running', extraLabels: { a: 'b' } }));
    expect(check.spec).toEqual({
      timeout: '2m',
      runInterval: '',
      podSpec: { containers: [{ name: 'main', image: 'x' }] },
      extraLabels: { a: 'b' },
    });
    expect(check.metadata.uid).toBe(UID);
  });
  it('reads a phase v2 would not write as new', () => {
    expect(phaseOf(khjob({ phase: 'Paused' }))).toBe('');
  });
});
