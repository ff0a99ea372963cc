import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildBundles } from '@khrun/devkit/build/bundle.ts';

const run = promisify(execFile);

/** What the benchmark measured: the commit, whether the tree differed from it, and the bundle's digest. */
export interface BuildIdentity {
  commit: string;
  /** The working tree differed from the commit in a file the bundles are built from (see dirtyPaths). */
  dirty: boolean;
  /** Changed or new files under functions/ and lib/, and the package files, at build time. */
  dirtyPaths: string[];
  /** sha256 of the CLI bundle measured (khrun.cjs, the code its entry khrun.mjs runs). */
  khrunSha256: string;
  builtAt: string;
  outdir: string;
}

const BUILT_FROM = ['functions', 'lib', 'package.json', 'package-lock.json'];

/**
 * Builds the bundles the benchmark measures (as `npm run build` does) into outdir, its own directory: the
 * benchmark never measures a dist/ left by an earlier build, and says which sources it built.
 */
export async function buildForBench(root: string, outdir: string): Promise<BuildIdentity> {
  // Not trimmed: a porcelain line starts with its status columns, a space among them.
  const git = async (...args: string[]) =>
    (await run('git', args, { cwd: root, maxBuffer: 16 << 20 })).stdout;
  const commit = (await git('rev-parse', 'HEAD').catch(() => 'unknown (not a git checkout)')).trim();
  const status = await git('status', '--porcelain', '--untracked-files=all', '--', ...BUILT_FROM).catch(
    () => '',
  );
  const dirtyPaths = status
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(3));
  await buildBundles({ root, outdir });
  const khrunSha256 = createHash('sha256')
    .update(await readFile(join(outdir, 'khrun.cjs')))
    .digest('hex');
  return {
    commit,
    dirty: dirtyPaths.length > 0,
    dirtyPaths,
    khrunSha256,
    builtAt: new Date().toISOString(),
    outdir: outdir.startsWith(`${root}/`) ? outdir.slice(root.length + 1) : outdir,
  };
}
