import { mkdir } from 'node:fs/promises';
import { buildBundles, formatBuildTable } from './bundle.ts';
import { type ColdImport, measureColdImport } from './cold-import.ts';
import { checkoutRevision } from './revision.ts';

export interface BuildCommandOptions {
  root: string;
  outdir: string;
  /** Fresh-process import timings per bundle; 0 skips the measurement. */
  measureRuns: number;
  /** The revision compiled in for `khrun version`: '' for none, undefined for the checkout's git commit. */
  revision: string | undefined;
  write: (line: string) => void;
}

/** `khrun build`: the bundles of functions/ into outdir, with their sizes (and cold import times). */
export async function buildCommand(opts: BuildCommandOptions): Promise<number> {
  await mkdir(opts.outdir, { recursive: true });
  const startedMs = Date.now();
  const revision = opts.revision ?? (await checkoutRevision(opts.root)) ?? '';
  const result = await buildBundles({ root: opts.root, outdir: opts.outdir, revision });
  for (const warning of result.warnings) opts.write(`warning: ${warning}`);
  let cold: Map<string, ColdImport> | undefined;
  if (opts.measureRuns > 0) {
    cold = new Map();
    for (const bundle of result.bundles) {
      cold.set(
        bundle.name,
        await measureColdImport(bundle.path, {
          runs: opts.measureRuns,
          argv: bundle.name === 'khrun' ? ['help'] : [],
        }),
      );
    }
  }
  for (const line of formatBuildTable(opts.root, result.bundles, cold)) opts.write(line);
  opts.write(
    `built ${result.bundles.length} bundles in ${Date.now() - startedMs} ms` +
      `${revision ? ` at revision ${revision}` : ' (no revision)'}; metafile ${result.metafilePath}`,
  );
  return 0;
}
