import { createHash } from 'node:crypto';
import type { PageData } from './page-data.ts';
import { goJson } from './status-json.ts';

/*
 * The status page: one self-contained document (HTML, CSS, vanilla JS; no build step, nothing loaded from
 * elsewhere). The server embeds the current data so the page shows the checks at once; the script then
 * fetches fresh data every few seconds, and a card's last-run log tail when its section is opened. All
 * check text, log lines included, reaches the DOM through textContent or as SVG
 * attribute values set by the script, never as markup; the embedded JSON escapes `<`, so it cannot close
 * its script element. A Content-Security-Policy allows exactly this script and this style, by hash.
 */

const STYLE = `
:root{--ok:#1a7f37;--fail:#cf222e;--skip:#8c959f;--run:#9a6700;--bg:#f6f8fa;--card:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0}
@media (prefers-color-scheme:dark){:root{--ok:#3fb950;--fail:#f85149;--skip:#6e7681;--run:#d29922;--bg:#0d1117;--card:#151b23;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
header{display:flex;flex-wrap:wrap;gap:12px 24px;align-items:center;padding:14px 24px;border-bottom:1px solid var(--line);background:var(--card)}
h1{font-size:18px;margin:0}
.banner{padding:4px 12px;border-radius:999px;font-weight:600;color:#fff}
.banner.ok{background:var(--ok)}.banner.fail{background:var(--fail)}
.meta{color:var(--muted)}.meta.stale{color:var(--fail);font-weight:600}
main{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));align-items:start;gap:14px;padding:18px 24px}
.card{background:var(--card);border:1px solid var(--line);border-left:6px solid var(--skip);border-radius:8px;padding:12px 14px;min-width:0}
.card.ok{border-left-color:var(--ok)}.card.fail{border-left-color:var(--fail)}
.title{display:flex;align-items:baseline;gap:8px;min-width:0}
.name{font-weight:600;font-size:15px;overflow-wrap:anywhere}
.ns{color:var(--muted);font-size:12px}
.kind{border:1px solid var(--line);border-radius:4px;padding:0 5px;color:var(--muted);font-size:11px}
.state{margin-left:auto;font-weight:700;font-size:12px;letter-spacing:.04em}
.ok .state{color:var(--ok)}.fail .state{color:var(--fail)}.pending .state{color:var(--skip)}
.stats{display:flex;flex-wrap:wrap;gap:2px 14px;color:var(--muted);margin:6px 0}
.stats b{color:var(--fg);font-weight:600}
.running{color:var(--run);font-weight:600}
ul.errors{margin:6px 0;padding-left:18px;color:var(--fail)}
ul.errors li{white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
svg.chart{display:block;width:100%;height:40px;margin-top:6px}
svg.chart .ok{fill:var(--ok)}svg.chart .fail{fill:var(--fail)}svg.chart .skip{fill:var(--skip)}
svg.chart .base{stroke:var(--line)}
.caption{color:var(--muted);font-size:11px}
details.log{margin-top:6px}details.log summary{cursor:pointer;color:var(--muted);font-size:12px}
pre.logtext{margin:4px 0 0;padding:6px 8px;max-height:16em;overflow:auto;background:var(--bg);border:1px solid var(--line);border-radius:4px;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap;overflow-wrap:anywhere}
.lognote{color:var(--muted);font-size:11px}
.empty{color:var(--muted);padding:24px}
h2.cluster{grid-column:1/-1;display:flex;gap:10px;align-items:center;margin:8px 0 0;font-size:16px}
.alerting{margin:4px 0;font-size:12px;color:var(--muted)}.alerting b{color:var(--run)}
`;

const SCRIPT = `(() => {
'use strict';
const cfg = JSON.parse(document.getElementById('khrun-config').textContent);
let data = JSON.parse(document.getElementById('khrun-data').textContent);
let receivedAt = Date.now();
let failure = null;
const SVG = 'http://www.w3.org/2000/svg';
function make(ns, tag, attrs, children) {
  const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children || []) if (c !== null && c !== undefined) e.append(typeof c === 'object' ? c : String(c));
  return e;
}
const h = (tag, attrs, ...children) => make(null, tag, attrs, children);
const s = (tag, attrs, ...children) => make(SVG, tag, attrs, children);
function dur(ms) {
  if (ms === null || ms === undefined) return '-';
  if (ms < 1000) return Math.round(ms) + 'ms';
  const sec = ms / 1000;
  if (sec < 60) return (Math.round(sec * 10) / 10) + 's';
  const m = Math.floor(sec / 60), r = Math.round(sec % 60);
  return m < 60 ? m + 'm' + (r ? r + 's' : '') : Math.floor(m / 60) + 'h' + (m % 60) + 'm';
}
function age(ms) {
  const sec = Math.max(0, Math.floor(ms / 1000));
  if (sec < 120) return sec + 's';
  if (sec < 7200) return Math.floor(sec / 60) + 'm';
  if (sec < 172800) return Math.floor(sec / 3600) + 'h';
  return Math.floor(sec / 86400) + 'd';
}
const now = () => data.nowMs + (Date.now() - receivedAt);
// The last run's log of a card, by check key: fetched when its section is opened (a failing check's opens by
// itself, for the first cfg.autoOpenLogs of them) and again after a newer run; shown as text only.
const logs = new Map();
let autoOpened = 0;
function logUrl(c) {
  return cfg.logsUrl + '?namespace=' + encodeURIComponent(c.namespace) + '&' +
    (c.kind === 'HealthCheck' ? 'healthcheck' : 'khcheck') + '=' + encodeURIComponent(c.name) + '&format=json';
}
async function loadLog(c, entry) {
  entry.loading = true;
  entry.runMs = c.lastRunMs;
  try {
    const res = await fetch(logUrl(c), { cache: 'no-store', headers: { accept: 'application/json' } });
    const body = await res.json();
    entry.error = res.ok ? null : (body && body.error) || 'HTTP ' + res.status;
    entry.body = res.ok ? body : null;
  } catch (e) {
    entry.error = e && e.message ? e.message : String(e);
    entry.body = null;
  }
  entry.loading = false;
  render();
}
function logSection(c) {
  if (!c.hasRun || c.lastRunMs === null) return null;
  let entry = logs.get(c.key);
  if (!entry) {
    entry = { open: !c.ok && autoOpened < cfg.autoOpenLogs, runMs: null, loading: false, error: null, body: null };
    if (entry.open) autoOpened++;
    logs.set(c.key, entry);
  }
  const fresh = () => entry.open && !entry.loading && entry.runMs !== c.lastRunMs;
  if (fresh()) loadLog(c, entry);
  const b = entry.body;
  const content = entry.error ? h('div', { class: 'lognote' }, entry.error)
    : !b ? h('div', { class: 'lognote' }, 'loading…')
    : b.lines.length === 0 ? h('div', { class: 'lognote' }, 'the log is empty')
    : h('div', {}, h('pre', { class: 'logtext' }, b.lines.join('\\n')),
        b.truncated || b.endMissing ? h('div', { class: 'lognote' }, (b.endMissing ? 'its last lines are too long: the end is cut; ' :
          'the last ' + b.lines.length + ' lines; ') + 'khrun logs ' + c.name + ' -n ' + c.namespace + ' prints the whole log') : null);
  const details = h('details', { class: 'log' }, h('summary', {}, "last run's log" + (b ? ' (pod ' + b.pod + ')' : '')), content);
  if (entry.open) details.setAttribute('open', '');
  details.addEventListener('toggle', () => {
    entry.open = details.open;
    if (fresh()) loadLog(c, entry);
  });
  return details;
}
function chart(c) {
  const n = Math.max(cfg.historySlots, c.history.length), w = 300, top = 34, slot = w / n;
  const max = Math.max(1, ...c.history.map((e) => e.durationMs));
  const svg = s('svg', { class: 'chart', viewBox: '0 0 ' + w + ' 40', preserveAspectRatio: 'none', role: 'img',
    'aria-label': 'last ' + c.history.length + ' runs' });
  svg.append(s('line', { class: 'base', x1: 0, y1: top + 0.5, x2: w, y2: top + 0.5 }));
  c.history.forEach((e, i) => {
    const hgt = Math.max(3, Math.round((Math.sqrt(e.durationMs) / Math.sqrt(max)) * (top - 2)));
    const cls = e.kind === 'Skipped' ? 'skip' : e.ok ? 'ok' : 'fail';
    const label = new Date(e.atMs).toLocaleString() + ' ' + e.kind + ' in ' + dur(e.durationMs) + (e.error ? '\\n' + e.error : '');
    svg.append(s('rect', { class: cls, x: (n - c.history.length + i) * slot + 1, y: top - hgt, width: Math.max(1, slot - 2),
      height: hgt, rx: 1 }, s('title', {}, label)));
  });
  return svg;
}
function pct(r) { return r === null || r === undefined ? '-' : (Math.floor(r * 10000) / 100).toFixed(2) + '%'; }
function alerting(c) {
  const a = c.alerts || {};
  const parts = [];
  if (a.held) parts.push(h('span', {}, h('b', {}, a.held.source === 'maintenance' ? 'maintenance' : 'silenced'),
    ' until ' + new Date(a.held.until).toLocaleString() + (a.held.reason ? ': ' + a.held.reason : '') + (a.held.by ? ' (' + a.held.by + ')' : '')));
  if (a.alert) parts.push(h('span', {}, 'alert ', h('b', {}, a.alert)));
  if (a.blockedBy) parts.push(h('span', {}, 'held back by ', h('b', {}, a.blockedBy[0]), ' (failing)'));
  return parts.length ? h('div', { class: 'alerting' }, ...parts.flatMap((p, i) => i ? ['; ', p] : [p])) : null;
}
function uptime(c) {
  const a = c.alerts && c.alerts.availability;
  if (!a || (a['24h'] === null && a['30d'] === null)) return null;
  return h('span', { title: 'share of OK results (24 h hourly, 7 and 30 UTC days)' }, 'up ',
    h('b', {}, pct(a['24h'])), ' 24h · ', h('b', {}, pct(a['7d'])), ' 7d · ', h('b', {}, pct(a['30d'])), ' 30d');
}
function card(c) {
  const cls = !c.hasRun ? 'pending' : c.ok ? 'ok' : 'fail';
  const stats = h('div', { class: 'stats' },
    h('span', {}, 'last run ', h('b', {}, c.lastRunMs === null ? 'never' : age(now() - c.lastRunMs) + ' ago')),
    h('span', {}, 'took ', h('b', {}, dur(c.durationMs))),
    h('span', {}, 'failures ', h('b', {}, c.consecutiveFailures)),
    c.outcome ? h('span', {}, h('b', {}, c.outcome)) : null,
    c.node ? h('span', {}, 'on ', h('b', {}, c.node)) : null,
    uptime(c));
  const running = c.running ? h('div', { class: 'running' }, 'running for ' + age(now() - c.running.startedAtMs) +
    ', deadline in ' + age(c.running.deadlineMs - now())) : null;
  const errors = c.errors.length ? h('ul', { class: 'errors' }, ...c.errors.map((e) => h('li', {}, e))) : null;
  const attrs = { class: 'card ' + cls, 'data-check': c.key, 'data-ok': String(c.ok), 'data-has-run': String(c.hasRun) };
  if (c.kind) attrs['data-kind'] = c.kind;
  return h('article', attrs,
    h('div', { class: 'title' }, h('span', { class: 'name' }, c.name), h('span', { class: 'ns' }, c.namespace),
      c.kind ? h('span', { class: 'kind', title: 'Kuberhealthy v3 ' + c.kind }, c.kind) : null,
      h('span', { class: 'state' }, !c.hasRun ? 'PENDING' : c.ok ? 'OK' : 'FAILING')),
    stats, alerting(c), running, errors, c.history.length ? chart(c) : null,
    c.history.length ? h('div', { class: 'caption' }, 'last ' + (c.history.length === 1 ? 'run' : c.history.length + ' runs, oldest first') + '; height: duration') : null,
    logSection(c));
}
const cards = (checks) => checks.length ? checks.map(card) : [h('p', { class: 'empty' }, 'No checks yet.')];
function group(g) {
  const checks = data.checks.filter((c) => c.cluster === g.name);
  const state = g.error ? 'UNREACHABLE' : g.ok ? 'OK' : checks.filter((c) => c.hasRun && !c.ok).length + ' failing';
  const head = h('h2', { class: 'cluster', 'data-cluster': g.name, 'data-ok': String(g.ok) }, g.name,
    h('span', { class: 'banner ' + (g.ok ? 'ok' : 'fail') }, state));
  if (g.error) return [head, h('article', { class: 'card fail', 'data-cluster-error': g.name },
    h('div', { class: 'title' }, h('span', { class: 'name' }, 'cannot read this cluster'), h('span', { class: 'state' }, 'UNREACHABLE')),
    h('ul', { class: 'errors' }, h('li', {}, g.error)))];
  return [head, ...cards(checks)];
}
function render() {
  const started = performance.now();
  const failing = data.checks.filter((c) => c.hasRun && !c.ok).length;
  const banner = document.getElementById('banner');
  banner.className = 'banner ' + (data.ok ? 'ok' : 'fail');
  const down = (data.clusters || []).filter((g) => g.error).length;
  banner.textContent = data.ok ? 'All checks OK' : failing + ' failing' + (down ? ', ' + down + ' cluster' + (down > 1 ? 's' : '') + ' unreachable' : '');
  document.getElementById('counts').textContent = data.checks.length + ' checks, ' + failing + ' failing';
  const meta = document.getElementById('updated');
  meta.className = 'meta' + (failure ? ' stale' : '');
  meta.textContent = (failure ? 'refresh failed (' + failure + '); data from ' : 'updated ') + age(Date.now() - receivedAt) + ' ago';
  const main = document.getElementById('checks');
  main.setAttribute('data-rendered-at', String(now()));
  main.replaceChildren(...(data.clusters ? data.clusters.flatMap(group) : cards(data.checks)));
  main.setAttribute('data-render-ms', (performance.now() - started).toFixed(1));
}
async function refresh() {
  try {
    const res = await fetch(cfg.dataUrl + location.search, { cache: 'no-store', headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error('HTTP ' + res.status);
    data = await res.json();
    receivedAt = Date.now();
    failure = null;
  } catch (e) {
    failure = e && e.message ? e.message : String(e);
  }
  render();
}
render();
refresh();
setInterval(refresh, cfg.refreshMs);
})();`;

const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** The page's Content-Security-Policy: only its own script and style run; it may fetch from its origin. */
export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  `script-src ${hash(SCRIPT)}`,
  `style-src ${hash(STYLE)}`,
  "connect-src 'self'",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The page's response headers: HTML under its CSP, never sniffed, cached or sent with a referrer. */
export function statusPageHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': STATUS_PAGE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    ...extra,
  };
}

export interface StatusPageOptions {
  data: PageData;
  /** Where the script fetches fresh PageData (the query string of the page is appended). */
  dataUrl: string;
  /** Where the script fetches a card's log tail (log-route.ts). */
  logsUrl: string;
  /** How many failing checks' log sections open (and fetch) by themselves. */
  autoOpenLogs: number;
  refreshMs: number;
  /** Bars drawn in each chart, so a check with few runs keeps the same scale. */
  historySlots: number;
}

/** The complete HTML document. */
export function renderStatusPage(opts: StatusPageOptions): string {
  const config = {
    dataUrl: opts.dataUrl,
    logsUrl: opts.logsUrl,
    autoOpenLogs: opts.autoOpenLogs,
    refreshMs: opts.refreshMs,
    historySlots: opts.historySlots,
  };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>khrun status</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<header><h1>khrun status</h1><span id="banner" class="banner"></span><span id="counts" class="meta"></span><span id="updated" class="meta"></span></header>
<main id="checks" aria-live="polite"></main>
<script id="khrun-config" type="application/json">${goJson(config, 0)}</script>
<script id="khrun-data" type="application/json">${goJson(opts.data, 0)}</script>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
