import type { HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf } from '../healthcheck/state-view.ts';
import type { KhState } from '../state/resources.ts';
import {
  availability,
  formatAvailability,
  readUptime,
  UPTIME_WINDOWS,
  type UptimeWindow,
} from '../state/uptime.ts';

/** `GET /badge/NAMESPACE/NAME.svg?window=24h`: a check's availability as an SVG badge. */
export const BADGE_PATH_PREFIX = '/badge/';
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** How long a badge may be cached (browsers, GitHub's image proxy): about a run interval. */
const MAX_AGE_S = 60;

export interface BadgeAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const escapeXml = (t: string) =>
  t.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] ?? c,
  );

/** A flat two-part badge; every text escaped, widths estimated from the character count. */
export function renderBadge(label: string, value: string, color: string): string {
  const w = (t: string) => Math.round(t.length * 6.6 + 12);
  const [lw, vw] = [w(label), w(value)];
  const [l, v] = [escapeXml(label), escapeXml(value)];
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${lw + vw}" height="20" role="img" aria-label="${l}: ${v}"><title>${l}: ${v}</title><rect width="${lw}" height="20" fill="#555"/><rect x="${lw}" width="${vw}" height="20" fill="${color}"/><g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11"><text x="${lw / 2}" y="14">${l}</text><text x="${lw + vw / 2}" y="14">${v}</text></g></svg>`;
}

export const colorOf = (ratio: number | null) =>
  ratio === null
    ? '#9f9f9f'
    : ratio >= 0.999
      ? '#44cc11'
      : ratio >= 0.99
        ? '#97ca00'
        : ratio >= 0.95
          ? '#dfb317'
          : '#e05d44';

const answer = (status: number, body: string, cache: string): BadgeAnswer => ({
  status,
  headers: {
    'content-type': 'image/svg+xml; charset=utf-8',
    'cache-control': cache,
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
  },
  body,
});

/**
 * The badge of the check a badge URL names: its khstate (a khcheck's, a khjob's) else the HealthCheck of
 * that name (`?kind=healthcheck` for a HealthCheck beside a khcheck of the same name). Read-only, from the
 * states the routes hold; names and the window are checked before anything is looked up, and the badge
 * shows nothing but the name and the figure.
 */
export function answerBadge(
  path: string,
  query: URLSearchParams,
  source: { states: readonly KhState[]; healthChecks: readonly HealthCheck[]; nowMs: number },
): BadgeAnswer {
  const m = /^\/badge\/([^/]+)\/([^/]+)\.svg$/.exec(path);
  const [namespace = '', name = ''] = m ? [m[1], m[2]] : [];
  const window = (query.get('window') ?? '24h') as UptimeWindow;
  const kind = query.get('kind') ?? '';
  if (
    !m ||
    !NAMESPACE.test(namespace) ||
    !NAME.test(name) ||
    !UPTIME_WINDOWS.includes(window) ||
    !['', 'khcheck', 'healthcheck'].includes(kind)
  )
    return answer(
      400,
      renderBadge('badge', `use /badge/NS/NAME.svg?window=${UPTIME_WINDOWS.join('|')}`, '#e05d44'),
      'no-store',
    );
  const state =
    kind === 'healthcheck'
      ? undefined
      : source.states.find((s) => s.metadata.namespace === namespace && s.metadata.name === name);
  const hc =
    state || kind === 'khcheck'
      ? undefined
      : source.healthChecks.find((h) => h.metadata.namespace === namespace && h.metadata.name === name);
  const obj = state ?? (hc ? stateViewOf(hc) : undefined);
  if (!obj) return answer(404, renderBadge(`${namespace}/${name}`, 'no such check', '#9f9f9f'), 'no-store');
  const ratio = availability(readUptime(obj), window, source.nowMs);
  return answer(
    200,
    renderBadge(`uptime ${window}`, ratio === null ? 'no data' : formatAvailability(ratio), colorOf(ratio)),
    `public, max-age=${MAX_AGE_S}`,
  );
}
