import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkRoute } from '../../lib/healthcheck/check-route.ts';
import { signedCheckUrl } from '../../lib/healthcheck/check-url.ts';
import type { CheckReportDeps } from '../../lib/healthcheck/handle-check-report.ts';
import type { UnsignedPolicy } from '../../lib/report/authorize-report.ts';
import { randomReportKey } from '../../lib/report/report-token.ts';
import { newKhState, readAcceptedReport } from '../../lib/state/khstate.ts';
import { claimRun } from '../../lib/state/record.ts';
import type { KhState } from '../../lib/state/resources.ts';

const NS = 'checks';
const NAME = 'web';
const UUID = '0f0e0d0c-1111-4111-8111-111111111111';
const NOW = 1_750_000_000_000;
const silent = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** The route on a real listener over a state store that counts every API request it would make. */
async function serve(
  opts: { unsigned?: UnsignedPolicy; deadlineMs?: number; deliver?: CheckReportDeps['deliver'] } = {},
) {
  const key = randomReportKey();
  const deadlineMs = opts.deadlineMs ?? NOW + 30_000;
  let state: KhState = claimRun(
    {
      ...newKhState(NAME, NS),
      metadata: { name: NAME, namespace: NS, resourceVersion: '1', annotations: {} },
    },
    {
      uuid: UUID,
      startedAtMs: NOW - 1_000,
      deadlineMs,
      pod: 'web-0f0e0',
      runner: 'r',
      leaseUntilMs: deadlineMs,
    },
  );
  const calls = { read: 0, replace: 0, findRun: 0 };
  const route = checkRoute(
    {
      findRun: async (uuid) => {
        calls.findRun++;
        return uuid === UUID ? { namespace: NS, checkName: NAME } : null;
      },
      state: {
        read: async () => {
          calls.read++;
          return structuredClone(state);
        },
        replace: async (next) => {
          calls.replace++;
          state = {
            ...next,
            metadata: {
              ...next.metadata,
              resourceVersion: String(Number(next.metadata.resourceVersion) + 1),
            },
          };
          return state;
        },
      },
      clock: { nowMs: () => NOW },
      log: silent,
      server: 'srv',
      ...(opts.deliver ? { deliver: opts.deliver } : {}),
    },
    { access: { key, unsigned: opts.unsigned ?? 'refuse', scope: 'all' }, maxBodyBytes: 1024 },
  );
  server = createServer(async (req, res) => {
    if (!(await route(req, res))) res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/check`;
  const signed = signedCheckUrl(base, key, { namespace: NS, checkName: NAME, uuid: UUID, deadlineMs });
  const post = (url: string, body: string, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'kh-run-uuid': UUID, ...headers },
    }).then((r) => r.status);
  return { base, signed, calls, post, state: () => state };
}

describe('POST /check: v3’s status codes, refused before any API request where it can be', () => {
  it('405 for another method, 415 without JSON, 400 without kh-run-uuid: no API request', async () => {
    const s = await serve();
    expect((await fetch(s.signed)).status).toBe(405);
    expect(await s.post(s.signed, '{"ok":true}', { 'content-type': 'text/plain' })).toBe(415);
    expect(
      await fetch(s.signed, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      }).then((r) => r.status),
    ).toBe(400);
    expect(s.calls).toEqual({ read: 0, replace: 0, findRun: 0 });
  });

  it('400 for an unsigned report where only signed ones are taken, or an altered token: no API request', async () => {
    const s = await serve();
    expect(await s.post(s.base, '{"ok":true}')).toBe(400);
    expect(
      await s.post(
        // Not the last character: its low bits are base64url padding, so some changes there decode to the
        // same MAC (a flaky pass-through of an "altered" token, about 1 run in 20).
        s.signed.replace(/(.)(.{4})$/, (_m, c: string, rest: string) => `${c === 'A' ? 'B' : 'A'}${rest}`),
        '{"ok":true}',
      ),
    ).toBe(400);
    expect(await s.post(s.signed, '{"ok":true}', { 'kh-run-uuid': 'another-run' })).toBe(400);
    expect(s.calls).toEqual({ read: 0, replace: 0, findRun: 0 });
  });

  it('410 for a genuine run past its deadline; 400 for ok:true with errors, ok:false without: no API request', async () => {
    const late = await serve({ deadlineMs: NOW - 1 });
    expect(await late.post(late.signed, '{"ok":true}')).toBe(410);
    expect(late.calls.read).toBe(0);
    server?.close();
    const s = await serve();
    expect(await s.post(s.signed, '{"ok":true,"errors":["x"]}')).toBe(400);
    expect(await s.post(s.signed, '{"ok":false,"errors":[]}')).toBe(400);
    expect(await s.post(s.signed, '{"ok":false,"errors":[""]}')).toBe(400);
    expect(await s.post(s.signed, 'not json')).toBe(400);
    expect(s.calls).toEqual({ read: 0, replace: 0, findRun: 0 });
  });

  it('200 for the run’s report (keys in any case, v3 client’s extra fields ignored); one read, one write', async () => {
    const s = await serve();
    expect(await s.post(s.signed, '{"OK":false,"Errors":["db down"],"currentUUID":""}')).toBe(200);
    expect(s.calls).toEqual({ read: 1, replace: 1, findRun: 0 });
    expect(readAcceptedReport(s.state())).toMatchObject({ uuid: UUID, ok: false, errors: ['db down'] });
  });

  it('a signed report of a run waited for here goes to that run: recorded is 200 with no API request', async () => {
    const delivered: unknown[] = [];
    const s = await serve({
      deliver: async (run, report) => {
        delivered.push({ run, report });
        return 'recorded';
      },
    });
    expect(await s.post(s.signed, '{"ok":false,"errors":["db down"]}')).toBe(200);
    expect(delivered).toEqual([
      {
        run: { namespace: NS, checkName: NAME, uuid: UUID, deadlineMs: NOW + 30_000 },
        report: { ok: false, errors: ['db down'], atMs: NOW },
      },
    ]);
    expect(s.calls).toEqual({ read: 0, replace: 0, findRun: 0 });
    // A body the gate refuses never reaches the run.
    expect(await s.post(s.signed, '{"ok":true,"errors":["x"]}')).toBe(400);
    expect(delivered).toHaveLength(1);
  });

  it('a report the waiting run declines (or no run waits for) is stored in the state as any other', async () => {
    for (const answer of ['declined', 'absent'] as const) {
      const s = await serve({ deliver: async () => answer });
      expect(await s.post(s.signed, '{"ok":true}')).toBe(200);
      expect(s.calls).toEqual({ read: 1, replace: 1, findRun: 0 });
      expect(readAcceptedReport(s.state())).toMatchObject({ uuid: UUID, ok: true });
      server?.close();
    }
  });

  it('unsigned, where allowed: found by its UUID as v3 does (400 "invalid or expired" otherwise)', async () => {
    const s = await serve({ unsigned: 'header' });
    expect(await s.post(s.base, '{"ok":true}', { 'kh-run-uuid': 'nobody' })).toBe(400);
    expect(await s.post(s.base, '{"ok":true}')).toBe(200);
    expect(s.calls.findRun).toBe(2);
  });
});
