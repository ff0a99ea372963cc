/**
 * How long the status views take to render for many checks. Run: `npx tsx test/perf/status-render.ts [N]`.
 * Builds N khstates in memory as khrun writes them (full 20-entry histories and totals; see
 * test/fixtures/khstates.ts), then times each route's handler (the work a request costs apart from the
 * socket): warm-up rounds first, then the median and 95th percentile of the measured rounds.
 */
import { performance } from 'node:perf_hooks';
import { handleStatusRequest } from '../../lib/status/status-routes.ts';
import { syntheticStates } from '../fixtures/khstates.ts';

const n = Number(process.argv[2] ?? 500);
const rounds = Number(process.argv[3] ?? 50);
const nowMs = Date.now();
const states = syntheticStates(n, nowMs);
const opts = { states: () => states, currentMaster: 'khrun-status-0', clock: { nowMs: () => nowMs } };

const routes = [
  { label: 'JSON (GET /)', url: '/', accept: undefined },
  { label: 'page (GET / as a browser)', url: '/', accept: 'text/html,*/*;q=0.8' },
  { label: 'page data (GET /status/data)', url: '/status/data', accept: undefined },
  { label: 'metrics (GET /metrics)', url: '/metrics', accept: undefined },
];

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
console.log(
  `${n} khstates (${states.filter((s) => s.spec.AuthoritativePod).length} have run), ${rounds} rounds after 10 warm-up rounds, Node ${process.version}`,
);
for (const route of routes) {
  const run = () => handleStatusRequest(opts, { url: route.url, accept: route.accept, hasBody: false });
  for (let i = 0; i < 10; i++) await run();
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    const res = await run();
    times.push(performance.now() - start);
    bytes = Buffer.byteLength(res?.body ?? '');
  }
  times.sort((a, b) => a - b);
  console.log(
    `${route.label.padEnd(30)} median ${pct(times, 0.5).toFixed(1).padStart(6)} ms   p95 ${pct(times, 0.95).toFixed(1).padStart(6)} ms   ${(bytes / 1024).toFixed(0).padStart(5)} KiB`,
  );
}
