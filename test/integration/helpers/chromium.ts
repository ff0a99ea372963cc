import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

/** Debian's chromium, which the status page test renders the page in. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * The Chromium binary, installed first when it is missing and this process is root (`apt-get update`, then
 * `apt-get install -y chromium`, as on a fresh Debian machine); otherwise an error that says what to install.
 * Never a skip: a test that silently does not run proves nothing.
 */
export async function ensureChromium(): Promise<string> {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `${CHROMIUM} is missing and this test is not running as root, so it cannot install it: ` +
        'run `apt-get update && apt-get install -y chromium` as root (Debian), or run the suite as root',
    );
  }
  const run = promisify(execFile);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    await run('apt-get', ['update', '-qq'], { env, timeout: 300_000 });
    await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], {
      env,
      timeout: 600_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(
      `${CHROMIUM} is missing and \`apt-get install -y chromium\` failed: ${stderr?.trim() || message}; ` +
        "install Debian's chromium package by hand",
      { cause: error },
    );
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, yet ${CHROMIUM} is still missing`);
  return CHROMIUM;
}
