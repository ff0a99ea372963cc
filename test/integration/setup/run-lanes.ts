// `npm run test:integration`: the integration suite's three lanes (lanes.ts) at the same time, one vitest
// process each, each lane on a local cluster of its own. vitest runs the projects of one process one group
// after another, so lanes that run at once are separate processes. Output lines are prefixed with the lane;
// the exit code is non-zero when any lane failed. Arguments are passed to every lane's vitest (a reporter,
// say); to run some files, use `npx vitest run FILES` instead. `--with-unit` (npm test) also runs the unit
// project first: it needs no cluster, so it runs while the shared tools are built, and the lanes start once
// it has ended. Unit and lanes at once on 2 cores held the load average at 15-17 (unit 931 s instead of
// 240 s alone) and made the integration lanes' timing assertions fail; one after the other costs the
// unit run (about 130 s alone since its files share worker processes, vitest.config.ts).
//
// KHRUN_TEST_REPORT_DIR=DIR also writes each lane's JSON report to DIR/<lane>.json (per-file durations).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { buildSharedTools, buildTestDist, repoRoot, TEST_DIST_READY_ENV } from './builds.ts';
import { FailureSummary } from './failure-summary.ts';
import { LANE_PROJECTS } from './lanes.ts';

const withUnit = process.argv.includes('--with-unit');
const args = process.argv.slice(2).filter((a) => a !== '--with-unit');
const reportDir = process.env.KHRUN_TEST_REPORT_DIR ? resolve(process.env.KHRUN_TEST_REPORT_DIR) : undefined;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

const startedMs = Date.now();
const loadAtStart = load();
const vitest = join(repoRoot, 'node_modules/vitest/vitest.mjs');
const children = new Set<ChildProcess>();
const unit = withUnit ? runLane('unit', ['unit', 'unit-mocks']) : undefined;
console.log(
  `[lanes] building (or finding cached) what more than one lane needs; load average ${loadAtStart}`,
);
// On a fresh machine the Go builds take minutes; done once here rather than by three lanes at once.
try {
  await buildSharedTools((line) => console.log(`[lanes] [build] ${line}`));
  await buildTestDist();
} catch (error) {
  for (const child of children) child.kill('SIGTERM');
  throw error;
}
const unitResult = unit ? await unit : undefined;
if (unitResult)
  console.log(`[lanes] unit ${unitResult.code === 0 ? 'passed' : 'FAILED'}; load average ${load()}`);
console.log(
  `[lanes] ready in ${Math.round((Date.now() - startedMs) / 1000)} s; starting ${LANE_PROJECTS.join(', ')}`,
);

interface LaneResult {
  project: string;
  code: number;
  seconds: number;
  failures: FailureSummary;
}

/** One vitest process running `projects` (default: the lane's own), its output prefixed with the lane. */
function runLane(project: string, projects: readonly string[] = [project]): Promise<LaneResult> {
  const laneStartedMs = Date.now();
  const reporters = reportDir
    ? ['--reporter=default', '--reporter=json', `--outputFile.json=${join(reportDir, `${project}.json`)}`]
    : [];
  if (reportDir) mkdirSync(reportDir, { recursive: true });
  const child = spawn(
    process.execPath,
    [vitest, 'run', ...projects.flatMap((p) => ['--project', p]), ...reporters, ...args],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        [TEST_DIST_READY_ENV]: '1',
        ...(process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: '1' } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.add(child);
  const tag = `[${project.replace(/^integration-?/, '') || 'parallel'}]`;
  const failures = new FailureSummary();
  const prefix = (stream: NodeJS.ReadableStream, out: NodeJS.WriteStream) => {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        out.write(`${tag} ${line}\n`);
        failures.add(line);
      }
    });
    stream.on('end', () => {
      if (rest) {
        out.write(`${tag} ${rest}\n`);
        failures.add(rest);
      }
    });
  };
  prefix(child.stdout!, process.stdout);
  prefix(child.stderr!, process.stderr);
  return new Promise((done) => {
    child.once('close', (code, signal) => {
      children.delete(child);
      done({
        project,
        code: code ?? (signal ? 128 : 1),
        seconds: Math.round((Date.now() - laneStartedMs) / 1000),
        failures,
      });
    });
  });
}

// Ctrl-C or a CI timeout: each lane stops its own cluster in its global teardown.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
  });
}

const results = [
  ...(unitResult ? [unitResult] : []),
  ...(await Promise.all(LANE_PROJECTS.map((lane) => runLane(lane)))),
];
console.log(`[lanes] load average at the start ${loadAtStart}, at the end ${load()}`);
for (const r of results)
  console.log(`[lanes] ${r.project}: ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`}, ${r.seconds} s`);
// Last, so that the tail of a long log names what failed: each failed lane's vitest failure summary again.
for (const r of results.filter((x) => x.code !== 0)) {
  const lines = r.failures.text();
  console.log(
    `[lanes] ${r.project} failed; ${lines.length ? 'its failures, as vitest summed them up:' : 'vitest printed no failure summary (see its output above)'}`,
  );
  for (const line of lines) console.log(`[lanes] ${r.project} | ${line}`);
}
console.log(`[lanes] whole integration suite: ${Math.round((Date.now() - startedMs) / 1000)} s`);
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
