import { spawn } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildText, sourceBuild } from '../bench/source-build.ts';
import { FAULTS_OUT_ENV } from '../integration/faults/helpers/fault-table.ts';
import { faultRows, renderFaultTable } from './render.ts';

// `npm run faults`: runs the fault and abuse suite (test/integration/faults/*.test.ts on the local cluster,
// and the report parser's fuzz test) with FAULTS_OUT_ENV set, so every scenario appends one measured row;
// then prints the rows as a markdown table and writes it to bench/faults.md and into docs/reliability.md's
// faults block. Scenarios record their rows before they assert, so a scenario that lost shows the loss, and
// one whose test failed is marked FAILED (test/faults/render.ts). Exits non-zero when a test failed.

const root = resolve(import.meta.dirname, '../..');
const vitest = join(root, 'node_modules/.bin/vitest');

function runVitest(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((done, reject) => {
    const child = spawn(vitest, ['run', ...args], { cwd: root, env, stdio: 'inherit' });
    child.once('error', reject);
    child.once('close', (code) => done(code ?? 1));
  });
}

async function main(): Promise<number> {
  const out = join(tmpdir(), `khrun-faults-${process.pid}.jsonl`);
  await rm(out, { force: true });
  const env = { ...process.env, [FAULTS_OUT_ENV]: out };
  const startedMs = Date.now();
  const codes = [
    await runVitest(['--project', 'unit', '--project', 'unit-mocks', 'test/unit/report-fuzz.test.ts'], env),
    // One file at a time (the integration lane runs three at once): each scenario's figures under its own
    // load only.
    await runVitest(['--project', 'integration', '--no-file-parallelism', 'test/integration/faults/'], env),
  ];
  const wallMs = Date.now() - startedMs;
  const text = await readFile(out, 'utf8').catch(() => '');
  await rm(out, { force: true });
  const rows = faultRows(text);
  const failed = codes.some((c) => c !== 0);
  const cpu = cpus();
  const build = buildText(await sourceBuild(root));
  const lines = [
    ...renderFaultTable(rows),
    '',
    `Measured by \`npm run faults\` on ${new Date().toISOString().slice(0, 10)}, ${build}: Node ${process.version}, ` +
      `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, the local cluster (etcd, kube-apiserver, ` +
      `controller manager, scheduler, process kubelet), one file at a time; ${rows.length} scenarios in ${Math.round(wallMs / 1000)} s` +
      (failed
        ? `; SOME TESTS FAILED (${rows.filter((r) => r.failed).length} scenarios marked FAILED above; vitest exit codes ${codes.join(', ')}).`
        : '.'),
  ];
  const table = `${lines.join('\n')}\n`;
  await mkdir(join(root, 'bench'), { recursive: true });
  await writeFile(join(root, 'bench/faults.md'), `# Fault and abuse suite\n\n${table}`);
  await writePageTable(table);
  process.stdout.write(`\n${table}\nwritten to bench/faults.md and ${RELIABILITY_PAGE}\n`);
  return failed ? 1 : 0;
}

/** The page whose faults block holds the table, from the repository root. */
const RELIABILITY_PAGE = 'docs/reliability.md';

/** Replaces the table between the page's faults markers with the one this run measured. */
async function writePageTable(table: string) {
  const path = join(root, RELIABILITY_PAGE);
  const page = await readFile(path, 'utf8');
  const begin = page.indexOf('<!-- faults:begin');
  const end = page.indexOf('<!-- faults:end -->');
  if (begin === -1 || end === -1)
    throw new Error(`${RELIABILITY_PAGE} has no <!-- faults:begin/end --> markers`);
  const afterBegin = page.indexOf('\n', begin) + 1;
  await writeFile(path, `${page.slice(0, afterBegin)}${table}${page.slice(end)}`);
}

process.exitCode = await main();
