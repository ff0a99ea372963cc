import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sourceBuild } from '../bench/source-build.ts';
import { projectOf } from '../integration/setup/lanes.ts';
import { COMPAT_OUT_ENV, COMPAT_V2_FILE } from './v2-results.ts';
import { renderV2Table } from './v2-table.ts';
import { COMPAT_V3_FILE } from './v3-results.ts';
import { renderV3Table } from './v3-table.ts';

// `npm run compat`: runs the compatibility tests on the local cluster, each in its lane's vitest project,
// with KHRUN_COMPAT_OUT_DIR set to a temporary directory, so each writes what it observed to its results
// file there; then copies each file written to bench/ and regenerates each block of
// docs/compatibility.md from its file. A results file a run did not write leaves its block as it was (and
// the exit code says so).

const root = resolve(import.meta.dirname, '../..');
const vitest = join(root, 'node_modules/.bin/vitest');

/** The page that holds the blocks, from the repository root. */
export const COMPATIBILITY_PAGE = 'docs/compatibility.md';

/** One table: the tests that measure it, the file they write in bench/, and the block it fills. */
interface CompatTable {
  tests: string[];
  file: string;
  /** `<!-- NAME:begin ... -->` … `<!-- NAME:end -->` in COMPATIBILITY_PAGE. */
  block: string;
  render: (results: unknown) => string;
}

const TABLES: CompatTable[] = [
  {
    tests: ['test/integration/compat/v2-checks.test.ts'],
    file: COMPAT_V2_FILE,
    block: 'compat-v2',
    render: renderV2Table,
  },
  {
    tests: ['test/integration/compat/v3-side-by-side.test.ts'],
    file: COMPAT_V3_FILE,
    block: 'compat-v3',
    render: (results) => renderV3Table(results as Parameters<typeof renderV3Table>[0]),
  },
];

function runVitest(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((done, reject) => {
    const child = spawn(vitest, ['run', ...args], { cwd: root, env, stdio: 'inherit' });
    child.once('error', reject);
    child.once('close', (code) => done(code ?? 1));
  });
}

/** Replaces what is between a block's markers in the page (the markers stay). */
export function replaceBlock(page: string, block: string, body: string): string {
  const begin = page.indexOf(`<!-- ${block}:begin`);
  const end = page.indexOf(`<!-- ${block}:end -->`);
  if (begin === -1 || end === -1)
    throw new Error(`${COMPATIBILITY_PAGE} has no <!-- ${block}:begin/end --> markers`);
  const afterBegin = page.indexOf('\n', begin) + 1;
  return `${page.slice(0, afterBegin)}${body}${page.slice(end)}`;
}

async function main(): Promise<number> {
  const bench = join(root, 'bench');
  // The tests write into a directory of their own: a run that writes nothing leaves bench/ as it was.
  const out = await mkdtemp(join(tmpdir(), 'khrun-compat-'));
  try {
    // Each file in the project of its lane (lanes.ts): a project excludes the files of the others.
    const byProject = new Map<string, string[]>();
    for (const test of TABLES.flatMap((t) => t.tests))
      byProject.set(projectOf(test), [...(byProject.get(projectOf(test)) ?? []), test]);
    let code = 0;
    for (const [project, tests] of byProject) {
      const exit = await runVitest(['--project', project, ...tests], {
        ...process.env,
        [COMPAT_OUT_ENV]: out,
      });
      if (exit !== 0) code = exit;
    }
    let missing = 0;
    for (const t of TABLES) {
      const text = await readFile(join(out, t.file), 'utf8').catch(() => undefined);
      if (text === undefined) {
        missing++;
        process.stderr.write(
          `${t.file} was not written: bench/${t.file} and the block ${t.block} are left as they were\n`,
        );
        continue;
      }
      // The build the tests ran, stamped into the results file: the block says it, and is rendered from the file.
      const results = { ...JSON.parse(text), build: await sourceBuild(root) };
      await writeFile(join(bench, t.file), `${JSON.stringify(results, null, 2)}\n`);
      const table = t.render(results);
      const path = join(root, COMPATIBILITY_PAGE);
      await writeFile(path, replaceBlock(await readFile(path, 'utf8'), t.block, table));
      process.stdout.write(
        `\n${table}\nwritten to ${COMPATIBILITY_PAGE} (${t.block}) from bench/${t.file}\n`,
      );
    }
    return code !== 0 || missing > 0 ? 1 : 0;
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename))
  process.exitCode = await main();
