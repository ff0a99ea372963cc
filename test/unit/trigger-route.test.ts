import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { chainRoutes } from '../../lib/report/routes.ts';
import type { TriggerTarget } from '../../lib/trigger/gate.ts';
import { triggerRoute } from '../../lib/trigger/trigger-route.ts';
import type { TriggerRuns } from '../../lib/trigger/trigger-runs.ts';

// The route on a real node:http listener on 127.0.0.1, with the runs replaced by a recorder: what reaches
// the runs, and what the caller is told, header by header.

const TOKEN = 'route-token-0123456789abcdef';
const trigger = vi.fn(async (t: TriggerTarget) => ({
  status: 202 as const,
  body: { check: `${t.namespace}/${t.checkName}`, accepted: true },
  headers: {},
}));
const runs: TriggerRuns = { trigger, active: () => [], close: async () => {} };
let server: Server;
let base: string;

beforeAll(async () => {
  const route = chainRoutes([
    triggerRoute({ gate: { auth: { kind: 'bearer', token: TOKEN }, scope: 'all', canWait: true }, runs }),
  ]);
  server = createServer(async (req, res) => {
    if (!(await route(req, res))) res.writeHead(404).end('not found\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const post = (query: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
  fetch(`${base}/api/run?${query}`, { method: 'POST', headers });

describe('POST /api/run on a node:http listener', () => {
  it('passes an authenticated, valid request to the runs and answers their JSON', async () => {
    trigger.mockClear();
    const res = await post('namespace=team-a&healthcheck=x');
    expect(res.status).toBe(202);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({ check: 'team-a/x', accepted: true });
    expect(trigger).toHaveBeenCalledWith({ namespace: 'team-a', checkName: 'x', wait: false });
  });

  it('answers refusals with their status, headers and reason, and never reaches the runs', async () => {
    trigger.mockClear();
    const missing = await post('namespace=team-a&healthcheck=x', {});
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="khrun"');
    expect(await missing.json()).toEqual({
      accepted: false,
      reason: 'send the trigger token as "Authorization: Bearer <token>"',
    });
    const wrong = await post('namespace=team-a&healthcheck=x', {
      authorization: 'Bearer wrong-token-0123456789',
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="khrun", error="invalid_token"');
    const get = await fetch(`${base}/api/run?namespace=team-a&healthcheck=x`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const bad = await post('namespace=Team-A&healthcheck=x');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { reason: string }).reason).toMatch(/is not a namespace name/);
    expect(trigger).not.toHaveBeenCalled();
  });

  it('leaves other paths to the next route', async () => {
    expect((await post('', {})).status).toBe(401);
    const other = await fetch(`${base}/api/runs`, { method: 'POST' });
    expect(other.status).toBe(404);
  });

  it('closes the connection of a request with a body it never reads', async () => {
    const answer = await new Promise<{ status?: number; connection?: string }>((resolve, reject) => {
      const req = httpRequest(
        `${base}/api/run?namespace=team-a&healthcheck=x`,
        { method: 'POST', headers: { 'content-length': '1000000' } },
        (res) => {
          res.resume();
          resolve({ status: res.statusCode, connection: res.headers.connection });
        },
      );
      req.on('error', reject);
      req.write('x'.repeat(1024));
    });
    expect(answer).toEqual({ status: 401, connection: 'close' });
  });
});
