import type { CoreV1Event, V1Job, V1JobCondition, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { type FollowView, followEnd, milestones } from '../../lib/rerun/follow-decide.ts';
import { documentExitCode, documentFromLog, documentFromState } from '../../lib/rerun/runner-document.ts';
import { ANNOTATION, newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

// Following a runner Job is pure decisions over what the watches saw: which progress lines are new, when
// the Job is over, and what its result is (the runner's document, else the outcome its pod recorded).

const start = { lastOutcomeUuid: 'old-run', runnerContainer: 'runner' };
const target = { kind: 'khcheck' as const, namespace: 'team-a', name: 'dns' };

function pod(name: string, createdS: number, status: V1Pod['status'] = {}, node = 'node-1'): V1Pod {
  return {
    metadata: { name, creationTimestamp: new Date(createdS * 1000) as unknown as Date },
    spec: { nodeName: node, containers: [{ name: 'runner' }] },
    status,
  };
}

const scheduled = { type: 'PodScheduled', status: 'True' };
const exited = (exitCode: number) => ({
  phase: exitCode === 0 ? 'Succeeded' : 'Failed',
  conditions: [scheduled],
  containerStatuses: [
    {
      name: 'runner',
      image: 'khrun',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode, reason: exitCode ? 'Error' : 'Completed' } },
    },
  ],
});

function state(annotations: Record<string, unknown>, spec: Partial<KhState['spec']> = {}): KhState {
  const s = newKhState('dns', 'team-a');
  s.metadata.annotations = Object.fromEntries(
    Object.entries(annotations).map(([k, v]) => [k, JSON.stringify(v)]),
  );
  s.spec = { ...s.spec, ...spec };
  return s;
}

const job = (
  conditions: Array<{ type: string; status: string; reason?: string; message?: string }> = [],
): V1Job => ({
  metadata: { name: 'khrun-rerun-dns-abcde', namespace: 'kuberhealthy' },
  status: { conditions: conditions as V1JobCondition[] },
});

const view = (v: Partial<FollowView>): FollowView => ({
  job: job(),
  pods: [],
  state: null,
  events: [],
  ...v,
});

describe('milestones', () => {
  it('shows each pod scheduled, stuck, running and exited, oldest pod first, without the run UUID', () => {
    const lines = milestones(
      view({
        pods: [
          pod('p2', 20, { phase: 'Running', conditions: [scheduled] }),
          pod('p1', 10, {
            phase: 'Pending',
            conditions: [scheduled],
            containerStatuses: [
              {
                name: 'runner',
                image: 'khrun',
                imageID: '',
                ready: false,
                restartCount: 0,
                state: { waiting: { reason: 'ImagePullBackOff', message: 'no such image' } },
              },
            ],
          }),
        ],
        state: state({
          [ANNOTATION.run]: {
            uuid: 'secret-run-uuid',
            startedAtMs: 1,
            deadlineMs: 2,
            pod: 'dns-1',
            runner: 'p2',
            leaseUntilMs: 2,
          },
        }),
      }),
      start,
    ).map((m) => m.line);
    expect(lines).toEqual([
      'pod p1 scheduled on node-1',
      'pod p1: container runner waiting: ImagePullBackOff: no such image',
      'pod p2 scheduled on node-1',
      'pod p2 running',
      'run claimed by p2',
    ]);
    expect(lines.join('\n')).not.toContain('secret-run-uuid');
  });

  it('says ContainerCreating nothing, an unschedulable pod why', () => {
    const lines = milestones(
      view({
        pods: [
          pod('p', 1, {
            conditions: [
              { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes' },
            ],
            containerStatuses: [
              {
                name: 'runner',
                image: '',
                imageID: '',
                ready: false,
                restartCount: 0,
                state: { waiting: { reason: 'ContainerCreating' } },
              },
            ],
          }),
        ],
      }),
      start,
    ).map((m) => m.line);
    expect(lines).toEqual(['pod p unschedulable: 0/1 nodes']);
  });

  it('an outcome newer than the one before the Job: by its pod, or by another runner', () => {
    const recorded = (by: string) =>
      milestones(
        view({
          pods: [pod('p', 1, exited(0))],
          state: state(
            {
              [ANNOTATION.outcome]: {
                uuid: 'new',
                kind: 'Failed',
                startedAtMs: 1,
                finishedAtMs: 5,
                durationMs: 1820,
              },
            },
            { AuthoritativePod: by },
          ),
        }),
        start,
      ).map((m) => m.line);
    expect(recorded('p')).toContain('outcome recorded by p: Failed in 1.82s');
    expect(recorded('khrun-run-dns-x')).toContain('an outcome was recorded by khrun-run-dns-x: Failed');
    const old = milestones(
      view({
        state: state({
          [ANNOTATION.outcome]: {
            uuid: 'old-run',
            kind: 'Failed',
            startedAtMs: 1,
            finishedAtMs: 5,
            durationMs: 1,
          },
        }),
      }),
      start,
    );
    expect(old).toEqual([]);
  });

  it('Warning Events about the Job, each once per count', () => {
    const event = (uid: string, count: number): CoreV1Event => ({
      metadata: { uid },
      involvedObject: { kind: 'Job', name: 'khrun-rerun-dns-abcde' },
      type: 'Warning',
      reason: 'FailedCreate',
      message: 'pods "x" is forbidden: exceeded quota',
      count,
    });
    const first = milestones(view({ events: [event('e', 1)] }), start);
    const again = milestones(view({ events: [event('e', 2)] }), start);
    expect(first.map((m) => m.line)).toEqual([
      'warning: FailedCreate on Job khrun-rerun-dns-abcde: pods "x" is forbidden: exceeded quota',
    ]);
    expect(first[0]?.key).not.toBe(again[0]?.key);
  });
});

describe('followEnd', () => {
  it('is not over while the Job has no Complete or Failed condition', () => {
    expect(followEnd(view({ pods: [pod('p', 1, exited(0))] }), start)).toBeUndefined();
    expect(followEnd(view({ job: job([{ type: 'FailureTarget', status: 'True' }]) }), start)).toBeUndefined();
  });

  it('a finished Job: the newest pod and its runner exit code', () => {
    const end = followEnd(
      view({
        job: job([{ type: 'Complete', status: 'True' }]),
        pods: [pod('a', 1, exited(1)), pod('b', 2, exited(0))],
      }),
      start,
    );
    expect(end).toEqual({ kind: 'finished', succeeded: true, pod: 'b', exitCode: 0 });
  });

  it('a failed Job says why', () => {
    const end = followEnd(
      view({
        job: job([
          { type: 'Failed', status: 'True', reason: 'DeadlineExceeded', message: 'Job was active longer' },
        ]),
        pods: [],
      }),
      start,
    );
    expect(end).toEqual({
      kind: 'finished',
      succeeded: false,
      reason: 'DeadlineExceeded: Job was active longer',
    });
  });

  it('a deleted Job ends following', () => {
    expect(followEnd(view({ job: null }), start)).toEqual({ kind: 'job-deleted' });
  });
});

describe("the runner's result", () => {
  const doc = {
    check: 'team-a/dns',
    result: 'recorded',
    kind: 'Failed',
    ok: false,
    errors: ['x'],
    durationMs: 5,
  };
  const logLine = (message: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ level: 'INFO', message, check: 'team-a/dns', result: 'recorded', ...extra });

  it('is the last document line of the runner log naming the check; log lines and other checks are not', () => {
    const log = [
      logLine('claimed'),
      JSON.stringify({ ...doc, check: 'team-a/other' }),
      JSON.stringify({ ...doc, kind: 'Succeeded' }),
      JSON.stringify(doc),
      logLine('outcome recorded'),
      'not json {',
      '',
    ].join('\n');
    expect(documentFromLog(log, target)).toEqual(doc);
    expect(documentFromLog([logLine('a'), '{"check":"team-a/dns"}'].join('\n'), target)).toBeUndefined();
    expect(documentFromLog('team-a/dns: Failed in 0.01s', target)).toBeUndefined();
  });

  it("a checker's error holding a document's text stays inside the document (JSON escapes its newline)", () => {
    const forged = `x\n${JSON.stringify({ ...doc, kind: 'Succeeded', ok: true })}`;
    const real = { ...doc, errors: [forged] };
    expect(documentFromLog(`${JSON.stringify(real)}\n`, target)).toEqual(real);
  });

  it('rebuilt from the state only for an outcome newer than before, recorded by one of the Job pods', () => {
    const recorded = state(
      {
        [ANNOTATION.outcome]: {
          uuid: 'new',
          kind: 'Failed',
          startedAtMs: 1,
          finishedAtMs: 5,
          durationMs: 1820,
        },
      },
      { OK: false, Errors: ['boom'], Node: 'n1', AuthoritativePod: 'p' },
    );
    expect(documentFromState(recorded, target, 'old-run', ['p'])).toEqual({
      check: 'team-a/dns',
      result: 'recorded',
      kind: 'Failed',
      ok: false,
      errors: ['boom'],
      node: 'n1',
      durationMs: 1820,
    });
    expect(documentFromState(recorded, target, 'new', ['p'])).toBeUndefined();
    expect(documentFromState(recorded, target, 'old-run', ['q'])).toBeUndefined();
    expect(documentFromState(null, target, undefined, ['p'])).toBeUndefined();
  });

  it.each([
    ['recorded', 0],
    ['busy', 0],
    ['superseded', 0],
    ['already-ran', 0],
    ['check-deleted', 0],
    ['interrupted', 1],
    ['refused', 2],
    ['something-new', 1],
  ])('result %s exits %i, as a run here does', (result, code) => {
    expect(documentExitCode({ check: 'a/b', result })).toBe(code);
  });
});
