import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/** What one system recorded for a check: its khstate's OK and Errors, or no khstate at all. */
export type Outcome = { ok: boolean; errors: string[] } | { missing: true };

export interface Compared {
  kuberhealthy: Outcome;
  khrun: Outcome;
  /** The same OK and the same errors (namespaces aside: each ran in its own). */
  same: boolean;
  note: string;
}

/** One row of the table: a check, where it came from, what was changed in its YAML, what both recorded. */
export interface CompatRow extends Compared {
  check: string;
  yaml: string;
  khcheck: string;
  edits: string[];
  /** Not the same, in the way the test explains (the note says how and why). */
  explained?: boolean;
}

export interface CompatResults {
  kuberhealthy: string;
  measured: string;
  /** The build the tests ran (stamped by `npm run compat`). */
  build?: { commit: string; dirty: boolean };
  how: string;
  daemonRewrites: string[];
  rows: CompatRow[];
}

/** Set by `npm run compat` (test/compat/table.ts): the directory the compat tests write what they observed to. */
export const COMPAT_OUT_ENV = 'KHRUN_COMPAT_OUT_DIR';

/** This table's file in that directory (bench/ for `npm run compat`). */
export const COMPAT_V2_FILE = 'compat-v2.json';

/** Each system ran in its own namespace: a namespace's name in an error says nothing about the check. */
function normalise(outcome: Outcome, namespaces: readonly string[]): Outcome {
  if ('missing' in outcome) return outcome;
  const errors = outcome.errors.map((e) =>
    namespaces.reduce((text, ns) => text.replaceAll(ns, '<namespace>'), e),
  );
  return { ok: outcome.ok, errors };
}

const describe = (o: Outcome) =>
  'missing' in o ? 'no khstate' : o.ok ? 'OK' : `not OK: ${o.errors.join('; ') || '(no errors)'}`;

/** Compares what both recorded (pure); the note says how they differ when they do. */
export function compareOutcomes(input: {
  kuberhealthy: Outcome;
  khrun: Outcome;
  namespaces: readonly string[];
}): Compared {
  const kuberhealthy = normalise(input.kuberhealthy, input.namespaces);
  const khrun = normalise(input.khrun, input.namespaces);
  const same =
    !('missing' in kuberhealthy) &&
    !('missing' in khrun) &&
    kuberhealthy.ok === khrun.ok &&
    JSON.stringify(kuberhealthy.errors) === JSON.stringify(khrun.errors);
  const note = same
    ? ''
    : `Kuberhealthy recorded ${describe(kuberhealthy)}; khrun recorded ${describe(khrun)}`;
  return { kuberhealthy, khrun, same, note };
}

/**
 * Writes the rows to compat-v2.json in the directory KHRUN_COMPAT_OUT_DIR names (`npm run compat`: bench/);
 * without it (the ordinary suite) nothing is written, so a test run never changes a committed file.
 */
export async function writeCompatResults(
  rows: CompatRow[],
  extra: { daemonRewrites: string[] },
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  const dir = env[COMPAT_OUT_ENV];
  if (!dir) return undefined;
  const results: CompatResults = {
    kuberhealthy: 'v2.7.1',
    measured: new Date().toISOString(),
    how:
      'test/integration/compat/v2-checks.test.ts on the local cluster: each khcheck run once by `khrun run --check NAME` ' +
      '(all at once) in one namespace, then once by the Kuberhealthy v2.7.1 daemon (its first run of each) in another; ' +
      'compared: the khstate OK and Errors each wrote',
    daemonRewrites: extra.daemonRewrites,
    rows,
  };
  const path = resolve(dir, COMPAT_V2_FILE);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`);
  return path;
}
