import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

/** Debian's shellcheck, which actionlint runs on every `run:` script of a workflow. */
export const SHELLCHECK = '/usr/bin/shellcheck';

/**
 * The shellcheck binary, installed first when it is missing and this process is root (`apt-get update`, then
 * `apt-get install -y shellcheck`, as on a fresh Debian machine); otherwise an error that says what to
 * install. Never a skip: actionlint without shellcheck turns that rule off and passes scripts it never read.
 */
export async function ensureShellcheck(): Promise<string> {
  if (existsSync(SHELLCHECK)) return SHELLCHECK;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `${SHELLCHECK} is missing and this test is not running as root, so it cannot install it: ` +
        'run `apt-get update && apt-get install -y shellcheck` as root (Debian), or run the suite as root',
    );
  }
  const run = promisify(execFile);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    await run('apt-get', ['update', '-qq'], { env, timeout: 300_000 });
    await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'shellcheck'], {
      env,
      timeout: 600_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(
      `${SHELLCHECK} is missing and \`apt-get install -y shellcheck\` failed: ${stderr?.trim() || message}; ` +
        "install Debian's shellcheck package by hand",
      { cause: error },
    );
  }
  if (!existsSync(SHELLCHECK))
    throw new Error(`apt-get installed shellcheck, yet ${SHELLCHECK} is still missing`);
  return SHELLCHECK;
}
