import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKhState } from '../../lib/state/khstate.ts';
import type { KhState } from '../../lib/state/resources.ts';
import type { PageData } from '../../lib/status/page-data.ts';
import { buildStatus, goJson } from '../../lib/status/status-json.ts';
import { STATUS_PAGE_CSP } from '../../lib/status/status-page.ts';
import {
  handleStatusRequest,
  prefersHtml,
  type StatusRoutesOptions,
  statusRoutes,
} from '../../lib/status/status-routes.ts';
import { syntheticStates } from '../fixtures/khstates.ts';
import { parsePromText } from '../helpers/prom-text.ts';

const NOW = Date.UTC(2024, 2, 5, 10, 30, 0);
const HOSTILE = '</script><script>alert("x")</script><img src=x onerror=alert(1)> & \u2028';

function hostileState(): KhState {
  const state = newKhState('hostile', 'team-a');
  state.spec = {
    ...state.spec,
    OK: false,
    Errors: [HOSTILE],
    AuthoritativePod: 'r',
    LastRun: '2024-03-05T10:20:30Z',
  };
  return state;
}
const states = [...syntheticStates(12, NOW), hostileState()];
const options: StatusRoutesOptions = {
  states: () => states,
  currentMaster: 'khrun-status-0',
  clock: { nowMs: () => NOW },
};
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

const get = (url: string, accept?: string, hasBody = false, opts = options) =>
  handleStatusRequest(opts, { url, accept, hasBody });

describe('content negotiation', () => {
  it.each([
    { accept: undefined, html: false },
    { accept: '*/*', html: false },
    { accept: 'application/json', html: false },
    { accept: BROWSER, html: true },
    { accept: 'text/html', html: true },
    { accept: 'application/json, text/html', html: false },
    { accept: 'text/html;q=0.5, application/json', html: false },
    { accept: 'text/*, application/json;q=0.1', html: true },
    { accept: 'text/html;q=0', html: false },
  ])('Accept: $accept → html=$html', ({ accept, html }) => {
    expect(prefersHtml(accept)).toBe(html);
  });
});

describe('handleStatusRequest', () => {
  it('answers GET / with v2’s JSON, pretty-printed with 2 spaces, by default', async () => {
    const res = await get('/');
    expect(res?.status).toBe(200);
    expect(res?.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res?.headers.vary).toBe('Accept');
    expect(res?.body).toBe(goJson(buildStatus(states, { currentMaster: 'khrun-status-0' })));
    expect(res?.body.split('\n')[1]).toBe('  "OK": false,');
  });

  it('answers the same JSON at /json, and filters ?namespace=', async () => {
    const res = await get('/json/?namespace=team-a,,nope');
    const body = JSON.parse(res?.body ?? '') as { CheckDetails: Record<string, { Namespace: string }> };
    expect(Object.keys(body.CheckDetails).length).toBeGreaterThan(0);
    expect(Object.values(body.CheckDetails).every((d) => d.Namespace === 'team-a')).toBe(true);
  });

  it.each(['/', '/json', '/metrics', '/status'])(
    'answers a request with a body on %s with 400, as v2',
    async (path) => {
      expect((await get(path, undefined, true))?.status).toBe(400);
    },
  );

  it('answers 503 until the source is ready, rather than an empty (all OK) status', async () => {
    const res = await get('/', undefined, false, { ...options, ready: () => false });
    expect(res).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
  });

  it('leaves other paths to the caller', async () => {
    expect(await get('/externalCheckStatus')).toBeUndefined();
    expect(await get('/favicon.ico')).toBeUndefined();
  });

  it('serves the page to browsers at / and to anyone at /status, with a strict CSP', async () => {
    for (const res of [await get('/', BROWSER), await get('/status')]) {
      expect(res?.status).toBe(200);
      expect(res?.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res?.headers['content-security-policy']).toBe(STATUS_PAGE_CSP);
      expect(res?.body.startsWith('<!doctype html>')).toBe(true);
    }
    expect(STATUS_PAGE_CSP).toMatch(
      /default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-/,
    );
  });

  it('embeds check text in the page only as escaped JSON, never as markup', async () => {
    const body = (await get('/status'))?.body ?? '';
    expect(body).not.toContain('<script>alert');
    expect(body).not.toContain('<img');
    expect(body.match(/<\/script>/g)).toHaveLength(3);
    const embedded =
      /<script id="khrun-data" type="application\/json">(.*?)<\/script>/s.exec(body)?.[1] ?? '';
    const data = JSON.parse(embedded) as PageData;
    expect(data.checks.find((c) => c.name === 'hostile')?.errors).toEqual([HOSTILE]);
  });

  it('serves the page’s data with history, failing checks first', async () => {
    const data = JSON.parse((await get('/status/data'))?.body ?? '') as PageData;
    expect(data.nowMs).toBe(NOW);
    expect(data.checks).toHaveLength(13);
    const firstPassing = data.checks.findIndex((c) => c.ok);
    expect(data.checks.slice(0, firstPassing).every((c) => !c.ok && c.hasRun)).toBe(true);
    expect(data.checks.find((c) => c.hasRun)?.history.length).toBeGreaterThan(0);
    expect(data.checks.filter((c) => !c.hasRun).every((c) => c.lastRunMs === null)).toBe(true);
  });

  it('serves /metrics in the text format', async () => {
    const res = await get('/metrics');
    expect(res?.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(parsePromText(res?.body ?? '').get('kuberhealthy_check')?.samples.length).toBeGreaterThan(0);
  });
});

describe('statusRoutes over node:http', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    const handler = statusRoutes(options);
    server = createServer(async (req, res) => {
      if (!(await handler(req, res))) {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('answers JSON, the page, metrics, 404 for others and 400 for a body', async () => {
    const json = await fetch(`${base}/`);
    expect(json.status).toBe(200);
    expect(((await json.json()) as { CurrentMaster: string }).CurrentMaster).toBe('khrun-status-0');
    const page = await fetch(`${base}/`, { headers: { accept: BROWSER } });
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    await page.text();
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    const posted = await fetch(`${base}/`, { method: 'POST', body: '{"OK":true,"Errors":[]}' });
    expect(posted.status).toBe(400);
    const chunked = await fetch(`${base}/json`, {
      method: 'POST',
      body: new Blob(['x']).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(400);
    expect((await fetch(`${base}/json`, { method: 'POST' })).status).toBe(200);
  });
});
