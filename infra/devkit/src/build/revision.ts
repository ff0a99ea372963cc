import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The global identifier a bundle's build replaces with its source revision (esbuild `define`):
 * functions/cli/version.ts reads it with `typeof`, so a build without one (the checkout's bundle, tsx)
 * has none instead of failing.
 */
export const REVISION_DEFINE = 'KHRUN_REVISION';

/** What a revision may be: a commit id or a tag-like name, printable, no spaces, at most 64 characters. */
export const REVISION_PATTERN = /^[0-9A-Za-z][0-9A-Za-z._+-]{0,63}$/;

/**
 * The revision of a checkout as git gives it (pure): the commit, with `-dirty` when tracked files differ
 * from it (`git status --porcelain --untracked-files=no` printed something), as `git describe --dirty`
 * marks it, so a bundle built from an edited tree never claims to be that commit.
 */
export function revisionOf(head: string, porcelainStatus: string): string | undefined {
  const commit = head.trim();
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commit)) return undefined;
  return porcelainStatus.trim() === '' ? commit : `${commit}-dirty`;
}

/** The revision of the git checkout at root, or undefined when it is none (no .git, no git command). */
export async function checkoutRevision(root: string): Promise<string | undefined> {
  try {
    const git = (args: string[]) => run('git', ['-C', root, ...args], { timeout: 30_000 });
    const head = await git(['rev-parse', '--verify', 'HEAD']);
    const status = await git(['status', '--porcelain', '--untracked-files=no']);
    return revisionOf(head.stdout, status.stdout);
  } catch {
    return undefined;
  }
}
