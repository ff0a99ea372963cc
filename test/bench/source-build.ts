import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The sources a measurement ran: the commit, and whether lib/, functions/ or the package files differed from it. */
export interface SourceBuild {
  commit: string;
  dirty: boolean;
}

/** The checkout's commit and whether its product sources differ from it (the faults and compat tables' build). */
export async function sourceBuild(root: string): Promise<SourceBuild> {
  const git = async (...args: string[]) =>
    (await run('git', args, { cwd: root, maxBuffer: 16 << 20 })).stdout;
  const commit = (await git('rev-parse', 'HEAD').catch(() => 'unknown')).trim();
  const status = await git(
    'status',
    '--porcelain',
    '--untracked-files=all',
    '--',
    'functions',
    'lib',
    'package.json',
    'package-lock.json',
  ).catch(() => '');
  return { commit, dirty: status.trim() !== '' };
}

/** "build 0123456789ab" (+ uncommitted changes), or that none was recorded. */
export const buildText = (b: Partial<SourceBuild> | undefined): string =>
  b?.commit
    ? `build ${b.commit.slice(0, 12)}${b.dirty ? ' + uncommitted changes' : ''}`
    : 'build not recorded';
