import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Clock } from '../core/clock.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { DEFAULT_HISTORY_BOUNDS } from '../state/history.ts';
import type { KhState } from '../state/resources.ts';
import { answerBadge, BADGE_PATH_PREFIX } from './badge.ts';
import type { MetricsOptions } from './error-label.ts';
import { answerLogRequest, LOG_ROUTE_PATH } from './log-route.ts';
import type { ReadTailFn } from './log-tail-cache.ts';
import { METRICS_CONTENT_TYPE, renderMetrics } from './metrics.ts';
import { buildPageData } from './page-data.ts';
import { buildStatus, goJson, parseNamespaceFilter } from './status-json.ts';
import { renderStatusPage, statusPageHeaders } from './status-page.ts';

export const STATUS_PATHS = {
  /** v2's status: JSON, or the page when the client prefers HTML. */
  root: '/',
  page: '/status',
  json: '/json',
  metrics: '/metrics',
  /** The page's own data (with history); not a stable API. */
  pageData: '/status/data',
  /** The log tail of a check's last run (log-route.ts), as Kuberhealthy v3's route of that path. */
  logs: LOG_ROUTE_PATH,
  /** `/badge/NS/NAME.svg?window=24h`: a check's availability as an SVG badge (badge.ts). */
  badge: '/badge',
} as const;

export interface StatusRoutesOptions {
  /** The khstates to show: a cache's snapshot in a server, a fresh list in a Lambda. */
  states: () => readonly KhState[] | Promise<readonly KhState[]>;
  /** The HealthChecks listed beside them (status JSON and metrics; healthcheck-json.ts); none when absent. */
  healthChecks?: () => readonly HealthCheck[] | Promise<readonly HealthCheck[]>;
  /** False while the source is still loading: answered 503 rather than with an incomplete view. */
  ready?: () => boolean;
  /** This server's name: v2's CurrentMaster and the current_master label. */
  currentMaster: string;
  clock: Clock;
  metrics?: MetricsOptions;
  /** Later v2's `stateMetadata`: added to the JSON as `Metadata` when not empty. */
  metadata?: Record<string, string>;
  /** How often the page fetches fresh data (default 5 s). */
  refreshMs?: number;
  /** Reads checker log tails for /api/logs (khrun serve: pods/log, cached); absent: that route answers 501. */
  readTail?: ReadTailFn;
}

/** A request as the status routes need it, independent of the HTTP runtime (node:http, Lambda URLs). */
export interface StatusRequest {
  /** Path and query, e.g. `/?namespace=a,b`. */
  url: string;
  accept?: string;
  /** Whether the request carried a body; v2 answers such a request 400 (a check reporting to the wrong URL). */
  hasBody: boolean;
}

export interface StatusResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const NO_STORE = { 'cache-control': 'no-store' };
const text = (status: number, body: string): StatusResponse => ({
  status,
  headers: { 'content-type': 'text/plain; charset=utf-8', ...NO_STORE },
  body: `${body}\n`,
});

/** The q-value the Accept header gives a media type (by exact, type/*, then * / * match). */
function qualityOf(accept: string, type: string): number {
  const [major] = type.split('/');
  let best = { specificity: -1, q: 0 };
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.trim().toLowerCase().split(';');
    const specificity = range === type ? 2 : range === `${major}/*` ? 1 : range === '*/*' ? 0 : -1;
    if (specificity <= best.specificity) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = q ? Number(q.slice(2)) : 1;
    best = { specificity, q: Number.isFinite(value) ? value : 0 };
  }
  return best.q;
}

/**
 * Browsers ask for text/html explicitly and rank it first; v2 clients, curl and scrapers send nothing or
 * `*∕*`. HTML only when it is preferred strictly over JSON, so every tie keeps v2's JSON.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const html = qualityOf(accept, 'text/html');
  return html > 0 && html > qualityOf(accept, 'application/json');
}

const ROUTES = new Set<string>(Object.values(STATUS_PATHS));

/** The status route a URL names (a trailing slash ignored), or undefined. */
export function statusRouteOf(url: string): string | undefined {
  const { pathname } = new URL(url, 'http://status.invalid');
  const path = pathname.length > 1 ? pathname.replace(/\/+$/, '') || '/' : pathname;
  if (path.startsWith(BADGE_PATH_PREFIX)) return STATUS_PATHS.badge;
  return ROUTES.has(path) ? path : undefined;
}

/**
 * Answers a status request, or undefined when the path is not a status route. Any method is answered, as
 * v2 does. Each answer is built from one read of the states.
 */
export async function handleStatusRequest(
  opts: StatusRoutesOptions,
  req: StatusRequest,
): Promise<StatusResponse | undefined> {
  const path = statusRouteOf(req.url);
  if (!path) return undefined;
  const url = new URL(req.url, 'http://status.invalid');
  if (req.hasBody) {
    return text(400, 'status requests take no body; checker pods report to /externalCheckStatus');
  }
  if (opts.ready && !opts.ready()) {
    const response = text(503, 'khstates are still loading; retry in a moment');
    response.headers['retry-after'] = '1';
    return response;
  }
  const namespaces = parseNamespaceFilter(url.searchParams.get('namespace'));
  const [states, healthChecks] = await Promise.all([opts.states(), opts.healthChecks?.() ?? []]);
  const nowMs = opts.clock.nowMs();
  const wantsPage = path === STATUS_PATHS.page || (path === STATUS_PATHS.root && prefersHtml(req.accept));
  const vary: Record<string, string> = path === STATUS_PATHS.root ? { vary: 'Accept' } : {};

  if (path === STATUS_PATHS.metrics) {
    const body = await renderMetrics(states, {
      currentMaster: opts.currentMaster,
      nowMs,
      options: opts.metrics,
      namespaces,
      healthChecks,
    });
    return { status: 200, headers: { 'content-type': METRICS_CONTENT_TYPE, ...NO_STORE }, body };
  }
  if (path === STATUS_PATHS.badge) {
    const { pathname } = url;
    return answerBadge(pathname.length > 2048 ? '' : pathname, url.searchParams, {
      states,
      healthChecks,
      nowMs,
    });
  }
  if (path === STATUS_PATHS.logs) {
    const answer = await answerLogRequest(url.searchParams, {
      states,
      healthChecks,
      ...(opts.readTail ? { readTail: opts.readTail } : {}),
    });
    return answer.text === undefined
      ? {
          status: answer.status,
          headers: { 'content-type': 'application/json; charset=utf-8', ...NO_STORE },
          body: goJson(answer.json ?? {}),
        }
      : {
          status: answer.status,
          headers: {
            'content-type': 'text/plain; charset=utf-8',
            'x-content-type-options': 'nosniff',
            ...NO_STORE,
          },
          body: answer.text,
        };
  }
  const pageData = () =>
    buildPageData(states, { namespaces, currentMaster: opts.currentMaster, nowMs, healthChecks });
  if (path === STATUS_PATHS.pageData) {
    return {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8', ...NO_STORE },
      body: goJson(pageData(), 0),
    };
  }
  if (wantsPage) {
    const body = renderStatusPage({
      data: pageData(),
      dataUrl: STATUS_PATHS.pageData,
      logsUrl: STATUS_PATHS.logs,
      autoOpenLogs: 8,
      refreshMs: opts.refreshMs ?? 5_000,
      historySlots: DEFAULT_HISTORY_BOUNDS.maxEntries,
    });
    return {
      status: 200,
      headers: statusPageHeaders(vary),
      body,
    };
  }
  const status = buildStatus(states, {
    namespaces,
    currentMaster: opts.currentMaster,
    metadata: opts.metadata,
    healthChecks,
    // khrun's own additions only when asked for: v2's readers get v2's document.
    ...(url.searchParams.get('khrun') === '1' ? { khrunDetailsAtMs: nowMs } : {}),
  });
  return {
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8', ...NO_STORE, ...vary },
    body: goJson(status),
  };
}

/** Whether a request has a body, reading at most limitBytes of it (the rest is drained, not kept). */
function hasBody(req: IncomingMessage, limitBytes = 64 * 1024): Promise<boolean> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > 0) {
    req.resume();
    return Promise.resolve(true);
  }
  return new Promise((resolve, reject) => {
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) req.removeAllListeners('data').resume();
    });
    req.once('end', () => resolve(size > 0));
    req.once('error', reject);
  });
}

const gzipAsync = promisify(gzip);

/** Whether the client takes gzip (and did not refuse it with q=0). */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  return (acceptEncoding ?? '').split(',').some((part) => {
    const [coding = '', ...params] = part.trim().toLowerCase().split(';');
    return (coding === 'gzip' || coding === '*') && !params.some((p) => /^\s*q=0(\.0*)?\s*$/.test(p));
  });
}

/**
 * The status routes as a node:http handler, shaped for the report server's `extraRoutes`: resolves true
 * when it answered, false when the path is not a status route (the caller answers it).
 */
export function statusRoutes(
  opts: StatusRoutesOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  return statusRoutesOf((request) => handleStatusRequest(opts, request));
}

/** Any answerer of status requests (one cluster's, a fleet's: fleet-routes.ts) as a node:http route. */
export function statusRoutesOf(
  handle: (request: StatusRequest) => Promise<StatusResponse | undefined>,
): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  return async (req, res) => {
    const url = req.url ?? '/';
    if (!statusRouteOf(url)) return false;
    const response = await handle({
      url,
      accept: req.headers.accept,
      hasBody: await hasBody(req),
    });
    if (!response) return false;
    // The page's data and the metrics of hundreds of checks are large and repetitive: gzip them.
    if (response.body.length > 1024 && acceptsGzip(req.headers['accept-encoding'])) {
      const vary = response.headers.vary ? `${response.headers.vary}, Accept-Encoding` : 'Accept-Encoding';
      res.writeHead(response.status, { ...response.headers, 'content-encoding': 'gzip', vary });
      res.end(await gzipAsync(response.body));
      return true;
    }
    res.writeHead(response.status, response.headers);
    res.end(response.body);
    return true;
  };
}
