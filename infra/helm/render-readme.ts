// The chart's README (infra/helm/khrun/README.md): helm-docs renders README.md.gotmpl, whose values table it
// writes from values.yaml (each value's `# --` comment; a value without one fails the rendering). Edit the
// template or values.yaml, then write the README again:
//
//   npx tsx infra/helm/render-readme.ts           # writes it (builds helm-docs on first use, cached)
//   npx tsx infra/helm/render-readme.ts --check   # exit 1 when the committed README differs
//
// test/integration/helm.test.ts fails when the committed README differs from the rendering.

import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CHART_DIR } from './render-deploy.ts';

const run = promisify(execFile);

export const README = `${CHART_DIR}/README.md`;

/** The README as helm-docs renders it from the chart (stdout of a dry run: nothing is written). */
export async function renderReadme(helmDocs: string, root: string): Promise<string> {
  const argv = [
    '--chart-search-root',
    join(root, CHART_DIR),
    '--template-files',
    'README.md.gotmpl',
    // values.yaml's order (its sections), not alphabetical.
    '--sort-values-order',
    'file',
    '--log-level',
    'warning',
    '--dry-run',
  ];
  let out: { stdout: string; stderr: string };
  try {
    out = await run(helmDocs, argv, { maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`helm-docs ${argv.join(' ')} failed: ${e.stderr || e.message}`);
  }
  // helm-docs skips a chart it cannot read with a warning and exits 0.
  if (!out.stdout.trim()) throw new Error(`helm-docs rendered nothing: ${out.stderr.trim()}`);
  const undocumented = undocumentedValues(out.stdout);
  if (undocumented.length)
    throw new Error(
      `values without a \`# --\` comment in ${CHART_DIR}/values.yaml: ${undocumented.join(', ')}`,
    );
  return out.stdout;
}

/**
 * The keys of the values table whose description is empty (pure). helm-docs' own strict mode also wants
 * a comment on every parent map and on each key inside a documented object, which is not what it asks.
 */
export function undocumentedValues(readme: string): string[] {
  return [...readme.matchAll(/^\| ([^ |]+) \| [^|]+ \| .* \|\s*\|$/gm)].map((m) => m[1]!);
}

/** Whether the committed README differs from its rendering. */
export async function readmeIsStale(helmDocs: string, root: string): Promise<boolean> {
  const current = await readFile(join(root, README), 'utf8').catch(() => undefined);
  return current !== (await renderReadme(helmDocs, root));
}

async function main(argv: string[]): Promise<number> {
  const { resolveHelmDocs } = await import('@khrun/devkit/local/helm-docs.ts');
  const root = resolve(import.meta.dirname, '../..');
  const cacheDir =
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');
  const helmDocs = await resolveHelmDocs({
    cacheDir,
    buildDir: join(root, 'infra/build'),
    onProgress: (line) => process.stderr.write(`${line}\n`),
  });
  if (argv.includes('--check')) {
    const stale = await readmeIsStale(helmDocs, root);
    if (stale)
      process.stderr.write(
        `${README} differs from its rendering\nrun: npx tsx infra/helm/render-readme.ts\n`,
      );
    return stale ? 1 : 0;
  }
  const text = await renderReadme(helmDocs, root);
  const current = await readFile(join(root, README), 'utf8').catch(() => undefined);
  if (current !== text) {
    await writeFile(join(root, README), text);
    process.stdout.write(`wrote ${README}\n`);
  }
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
