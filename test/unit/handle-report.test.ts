import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import { WriteConflict } from '../../lib/kube/errors.ts';
import type { ReportCaller } from '../../lib/report/authorize-report.ts';
import {
  DEFAULT_API_RETRY_MS,
  DEFAULT_MAX_HOLD_MS,
  handleReport,
  type ReportDeps,
  type ReportRequest,
  reportHoldMs,
} from '../../lib/report/handle-report.ts';
import { type ActiveRun, ANNOTATION, newKhState, readAcceptedReport } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';

const T0 = Date.UTC(2024, 2, 5, 10, 20, 30, 0);
const UUID = '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
const POD = 'dns-1709634030';
const IP = '10.244.1.17';

const RUN: ActiveRun = {
  uuid: UUID,
  startedAtMs: T0 - 5_000,
  deadlineMs: T0 + 300_000,
  pod: POD,
  runner: 'runner-a',
  leaseUntilMs: T0 + 30_000,
};

function activeState(resourceVersion = '5'): KhState {
  const state = newKhState('dns', 'checks');
  state.metadata.resourceVersion = resourceVersion;
  state.spec = { ...state.spec, uuid: UUID, RunDuration: '2s', Node: 'node-1' };
  state.metadata.annotations = { [ANNOTATION.run]: JSON.stringify(RUN) };
  return state;
}

const checkerPod: V1Pod = {
  metadata: {
    name: POD,
    namespace: 'checks',
    labels: { 'kuberhealthy-run-id': UUID },
    annotations: { 'comcast.github.io/check-name': 'dns' },
  },
  spec: { containers: [{ name: 'main', image: 'img', env: [{ name: 'KH_RUN_UUID', value: UUID }] }] },
  status: { phase: 'Running', podIP: IP },
};

function fakes(
  opts: { pods?: V1Pod[]; replace?: (s: KhState) => Promise<KhState>; maxWriteAttempts?: number } = {},
) {
  const pods = opts.pods ?? [checkerPod];
  const lookup = {
    podsByRunId: vi.fn(async (uuid: string) =>
      pods.filter((p) => p.metadata?.labels?.['kuberhealthy-run-id'] === uuid),
    ),
    livePodsByIp: vi.fn(async (ip: string) => pods.filter((p) => p.status?.podIP === ip)),
  };
  let reads = 0;
  const state = {
    read: vi.fn(async (_ns: string, _name: string) => activeState(String(5 + reads++))),
    replace: vi.fn(opts.replace ?? (async (s: KhState) => s)),
  };
  const log = { info: vi.fn(), warn: vi.fn(), error: vi.fn(), debug: vi.fn() };
  const deps: ReportDeps = {
    lookup,
    state,
    clock: { nowMs: () => T0 },
    log,
    server: 'khrun-report-7d9f',
    ...(opts.maxWriteAttempts ? { maxWriteAttempts: opts.maxWriteAttempts } : {}),
  };
  return { deps, lookup, state, log };
}

/** The khstate passed to the nth replace call. */
function nthWrite(replace: { mock: { calls: unknown[][] } }, n: number): KhState {
  const state = replace.mock.calls[n]?.[0];
  if (!state) throw new Error(`no replace call #${n}`);
  return state as KhState;
}

type Over = { method?: string; headerUuid?: string; sourceIp?: string; caller?: ReportCaller };
/** A report as the server hands it on: by default an unsigned one with the header and a source address. */
const post = (body: string, over: Over = {}): ReportRequest => {
  const { method = 'POST', caller, ...who } = over;
  return { method, body, caller: caller ?? { via: 'unsigned', headerUuid: UUID, sourceIp: IP, ...who } };
};
const SIGNED_RUN = { namespace: 'checks', checkName: 'dns', uuid: UUID, deadlineMs: RUN.deadlineMs };
const SIGNED: ReportCaller = { via: 'signed', run: SIGNED_RUN };

describe('handleReport', () => {
  it('stores a report to a signed URL with one read and one write: no pod lookup at all', async () => {
    const f = fakes({ pods: [] });
    const response = await handleReport(f.deps, post('{"OK": true}', { caller: SIGNED }));
    expect(response).toEqual({ status: 200, message: 'report accepted' });
    expect(f.lookup.podsByRunId).not.toHaveBeenCalled();
    expect(f.lookup.livePodsByIp).not.toHaveBeenCalled();
    expect(f.state.read).toHaveBeenCalledTimes(1);
    expect(f.state.read).toHaveBeenCalledWith('checks', 'dns');
    expect(readAcceptedReport(nthWrite(f.state.replace, 0))).toMatchObject({
      uuid: UUID,
      ok: true,
      pod: POD,
    });
  });

  it("refuses a signed URL of an earlier run with 400 (the khstate's active run is another)", async () => {
    const f = fakes();
    const earlier: ReportCaller = { via: 'signed', run: { ...SIGNED_RUN, uuid: 'e4rl1er-run' } };
    const response = await handleReport(f.deps, post('{"OK": true}', { caller: earlier }));
    expect(response.status).toBe(400);
    expect(response.message).toMatch(/not the active run/);
    expect(f.state.replace).not.toHaveBeenCalled();
  });

  it('answers a bodiless GET with 200 and touches nothing', async () => {
    const f = fakes();
    const response = await handleReport(f.deps, post('', { method: 'GET' }));
    expect(response.status).toBe(200);
    expect(response.message).toContain('POST');
    expect(f.lookup.podsByRunId).not.toHaveBeenCalled();
    expect(f.state.read).not.toHaveBeenCalled();
  });

  it('handles a GET with a body as a report (v2 does not check the method)', async () => {
    const f = fakes();
    const response = await handleReport(f.deps, post('{"OK": false, "Errors": []}', { method: 'GET' }));
    expect(response.status).toBe(400);
    expect((await handleReport(f.deps, post('{"OK": true}', { method: 'GET' }))).status).toBe(200);
    expect(f.state.replace).toHaveBeenCalledTimes(1);
  });

  it('rejects a bodiless POST with 400', async () => {
    const f = fakes();
    expect((await handleReport(f.deps, post(''))).status).toBe(400);
    expect(f.lookup.podsByRunId).not.toHaveBeenCalled();
  });

  it.each([
    { name: 'malformed JSON', body: '{"OK": tru' },
    { name: 'a JSON array', body: '[true]' },
    { name: 'OK of the wrong type', body: '{"OK": "yes", "Errors": []}' },
  ])('rejects $name with 400 before any API call', async ({ body }) => {
    const f = fakes();
    const response = await handleReport(f.deps, post(body));
    expect(response.status).toBe(400);
    expect(response.message).toMatch(/^report rejected: /);
    expect(f.lookup.podsByRunId).not.toHaveBeenCalled();
    expect(f.lookup.livePodsByIp).not.toHaveBeenCalled();
    expect(f.state.read).not.toHaveBeenCalled();
    expect(f.state.replace).not.toHaveBeenCalled();
  });

  it('rejects OK false without errors with 400 before any API call', async () => {
    const f = fakes();
    const response = await handleReport(f.deps, post('{"OK": false, "Errors": []}'));
    expect(response.status).toBe(400);
    expect(response.message).toContain('"OK" is false but "Errors" is empty');
    expect(f.lookup.podsByRunId).not.toHaveBeenCalled();
    expect(f.state.read).not.toHaveBeenCalled();
  });

  it('rejects an unknown caller with 400 and writes nothing', async () => {
    const f = fakes({ pods: [] });
    const response = await handleReport(f.deps, post('{"OK": true}'));
    expect(response).toEqual({
      status: 400,
      message: `report rejected: no kh-run-uuid header, and no running checker pod has IP ${IP}; send the header kh-run-uuid: $KH_RUN_UUID`,
    });
    expect(f.state.read).not.toHaveBeenCalled();
    expect(f.state.replace).not.toHaveBeenCalled();
    expect(f.log.warn).toHaveBeenCalledWith(
      'report rejected',
      expect.objectContaining({ reason: expect.any(String) }),
    );
  });

  it('rejects a report the gate refuses (no active run) with 400 and writes nothing', async () => {
    const f = fakes();
    f.state.read.mockImplementation(async () => newKhState('dns', 'checks'));
    const response = await handleReport(f.deps, post('{"OK": true}'));
    expect(response.status).toBe(400);
    expect(response.message).toContain('has no active run');
    expect(f.state.replace).not.toHaveBeenCalled();
  });

  it.each([
    { name: 'with the header', over: {} },
    { name: 'without the header (source IP)', over: { headerUuid: undefined } },
  ])('accepts a report $name: 200 and exactly one replace with the expected state', async ({ over }) => {
    const f = fakes();
    const response = await handleReport(
      f.deps,
      post('{"ok": false, "errors": ["kube-dns timed out"]}', over),
    );
    expect(response).toEqual({ status: 200, message: 'report accepted' });
    expect(f.state.read).toHaveBeenCalledWith('checks', 'dns');
    expect(f.state.replace).toHaveBeenCalledTimes(1);
    const written = nthWrite(f.state.replace, 0);
    expect(written.metadata.resourceVersion).toBe('5');
    expect(written.spec).toEqual({
      OK: false,
      Errors: ['kube-dns timed out'],
      RunDuration: '2s',
      Namespace: 'checks',
      Node: 'node-1',
      LastRun: '2024-03-05T10:20:30Z',
      AuthoritativePod: 'khrun-report-7d9f',
      uuid: UUID,
    });
    expect(readAcceptedReport(written)).toEqual({
      uuid: UUID,
      atMs: T0,
      ok: false,
      errors: ['kube-dns timed out'],
      pod: POD,
    });
    expect(written.metadata.annotations?.[ANNOTATION.run]).toBe(JSON.stringify(RUN));
  });

  it('records OK true with errors as a failure', async () => {
    const f = fakes();
    expect((await handleReport(f.deps, post('{"OK": true, "Errors": ["half broken"]}'))).status).toBe(200);
    const written = nthWrite(f.state.replace, 0);
    expect(written.spec.OK).toBe(false);
    expect(written.spec.Errors).toEqual(['half broken']);
  });

  it('re-reads and retries after a write conflict, then answers 200', async () => {
    const f = fakes({
      replace: vi
        .fn<(s: KhState) => Promise<KhState>>()
        .mockRejectedValueOnce(new WriteConflict('Conflict'))
        .mockImplementation(async (s) => s),
    });
    const response = await handleReport(f.deps, post('{"OK": true}'));
    expect(response.status).toBe(200);
    expect(f.state.read).toHaveBeenCalledTimes(2);
    expect(f.state.replace).toHaveBeenCalledTimes(2);
    // The second write is built from the second read, not the stale first one.
    expect(nthWrite(f.state.replace, 1).metadata.resourceVersion).toBe('6');
  });

  it.each([
    { attempts: undefined, expected: 8 },
    { attempts: 3, expected: 3 },
  ])('answers 500 after $expected conflicting writes', async ({ attempts, expected }) => {
    const f = fakes({
      replace: async () => {
        throw new WriteConflict('Conflict');
      },
      ...(attempts ? { maxWriteAttempts: attempts } : {}),
    });
    const response = await handleReport(f.deps, post('{"OK": true}'));
    expect(response).toEqual({
      status: 500,
      message: `the report could not be stored after ${expected} conflicting writes; retry`,
    });
    expect(f.state.replace).toHaveBeenCalledTimes(expected);
    expect(f.state.read).toHaveBeenCalledTimes(expected);
  });

  it('answers 500 at once on a write error that is not a conflict', async () => {
    const f = fakes({
      replace: async () => {
        throw Object.assign(new Error('etcdserver: request timed out'), { code: 500 });
      },
    });
    const response = await handleReport(f.deps, post('{"OK": true}'));
    expect(response).toEqual({ status: 500, message: 'the report could not be stored; retry' });
    expect(f.state.replace).toHaveBeenCalledTimes(1);
    expect(f.log.error).toHaveBeenCalledWith(
      'report could not be written',
      expect.objectContaining({ check: 'checks/dns' }),
    );
  });
});

describe('handleReport while the API server is unreachable', () => {
  const unavailable = () => Object.assign(new Error('HTTP 503'), { statusCode: 503 });

  it('waits for the API within the request and stores the report once it answers', async () => {
    const f = fakes();
    let failures = 2;
    const read = f.state.read.getMockImplementation()!;
    f.state.read.mockImplementation(async (ns: string, name: string) => {
      if (failures-- > 0) throw unavailable();
      return read(ns, name);
    });
    const delays: number[] = [];
    const response = await handleReport(
      { ...f.deps, delay: async (ms) => void delays.push(ms) },
      post('{"OK": true}'),
    );
    expect(response.status).toBe(200);
    expect(delays).toEqual([250, 500]);
    expect(f.state.replace).toHaveBeenCalledTimes(1);
  });

  it('answers 500 once the API has been unreachable for apiRetryMs', async () => {
    const f = fakes();
    f.state.read.mockImplementation(async () => {
      throw unavailable();
    });
    let now = T0;
    const advance = async (ms: number) => {
      now += ms;
    };
    const response = await handleReport(
      { ...f.deps, clock: { nowMs: () => now }, apiRetryMs: 3_000, delay: advance },
      post('{"OK": true}'),
    );
    expect(response).toEqual({
      status: 500,
      message: expect.stringMatching(/API server is unavailable; retry/),
    });
    expect(now - T0).toBe(3_000);
    expect(f.state.replace).not.toHaveBeenCalled();
  });

  it('counts a write whose reply was lost as stored when the next read shows it', async () => {
    let stored: KhState | undefined;
    const f = fakes({
      replace: async (s) => {
        stored = s;
        throw unavailable();
      },
    });
    const read = f.state.read.getMockImplementation()!;
    f.state.read.mockImplementation(async (ns: string, name: string) => stored ?? read(ns, name));
    const response = await handleReport(
      { ...f.deps, delay: async () => {} },
      post('{"OK": false, "Errors": ["disk"]}'),
    );
    expect(response.status).toBe(200);
    expect(f.state.replace).toHaveBeenCalledTimes(1);
  });
});

describe('reportHoldMs: how long a report waits for an unreachable API server', () => {
  const signed = (deadlineMs: number): ReportCaller => ({
    via: 'signed',
    run: { namespace: 'ns', checkName: 'c', uuid: 'u', deadlineMs },
  });
  const unsigned: ReportCaller = { via: 'unsigned', headerUuid: 'u', sourceIp: undefined };

  it('holds a signed report until its run deadline, since v2 clients lose a report answered 500', () => {
    expect(reportHoldMs(signed(T0 + 120_000), T0, {})).toBe(120_000);
  });
  it('holds at least apiRetryMs, even when the deadline is nearer', () => {
    expect(reportHoldMs(signed(T0 + 1_000), T0, {})).toBe(DEFAULT_API_RETRY_MS);
    expect(reportHoldMs(signed(T0 + 1_000), T0, { apiRetryMs: 3_000 })).toBe(3_000);
  });
  it('an unsigned report (no deadline known) waits apiRetryMs', () => {
    expect(reportHoldMs(unsigned, T0, {})).toBe(DEFAULT_API_RETRY_MS);
  });
  it('never beyond maxHoldMs (the Lambda passes its remaining time), and never negative', () => {
    expect(reportHoldMs(signed(T0 + 3_600_000), T0, {})).toBe(DEFAULT_MAX_HOLD_MS);
    expect(reportHoldMs(signed(T0 + 120_000), T0, { maxHoldMs: 8_000 })).toBe(8_000);
    expect(reportHoldMs(signed(T0 + 120_000), T0, { maxHoldMs: -5 })).toBe(0);
  });
});
