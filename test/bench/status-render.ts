import { gzipSync } from 'node:zlib';
import { handleStatusRequest } from '../../lib/status/status-routes.ts';
import { syntheticStates } from '../fixtures/khstates.ts';
import { type Summary, summarize } from './stats.ts';

// The bench's status-render section: what each status route's handler costs for many checks, in-process
// (the work a request costs apart from the socket). No cluster: the khstates are built in memory as khrun
// writes them (test/fixtures/khstates.ts).

export interface RouteFigure {
  label: string;
  ms: Summary;
  bytes: number;
  gzipBytes: number;
}

const ROUTES = [
  { label: 'status JSON (GET /)', url: '/', accept: undefined },
  { label: 'status page (GET / as a browser)', url: '/', accept: 'text/html,*/*;q=0.8' },
  { label: 'page data (GET /status/data)', url: '/status/data', accept: undefined },
  { label: 'metrics (GET /metrics)', url: '/metrics', accept: undefined },
];

export async function measureStatusRender(opts: { checks: number; rounds: number; warmup: number }) {
  const nowMs = Date.now();
  const states = syntheticStates(opts.checks, nowMs);
  const routeOpts = { states: () => states, currentMaster: 'khrun-status-0', clock: { nowMs: () => nowMs } };
  const routes: RouteFigure[] = [];
  for (const route of ROUTES) {
    const run = () =>
      handleStatusRequest(routeOpts, { url: route.url, accept: route.accept, hasBody: false });
    for (let i = 0; i < opts.warmup; i++) await run();
    const times: number[] = [];
    let body = '';
    for (let i = 0; i < opts.rounds; i++) {
      const start = performance.now();
      const res = await run();
      times.push(performance.now() - start);
      body = res?.body ?? '';
    }
    routes.push({
      label: route.label,
      ms: summarize(times),
      bytes: Buffer.byteLength(body),
      gzipBytes: gzipSync(body).length,
    });
  }
  return {
    how: `each route's handler called in the benchmark process (lib/status/status-routes.ts, no socket) over ${opts.checks} khstates built as khrun writes them (full histories and totals; every seventh never ran, every fifth failing), ${opts.rounds} rounds after ${opts.warmup} warm-up rounds, one after another; sizes of the last answer, and gzipped at the default level; Node ${process.version}`,
    checks: opts.checks,
    routes,
  };
}

export type StatusRenderFigures = Awaited<ReturnType<typeof measureStatusRender>>;
