import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * One lock for every apt-get of the suite: files of several lanes run at once, and two `apt-get install`s
 * at the same time fail on dpkg's lock (`Could not get lock /var/lib/dpkg/lock-frontend`). flock (util-linux,
 * in every Debian) waits for it; DPkg::Lock::Timeout also waits for an apt-get of someone else.
 */
const APT_LOCK = '/tmp/khrun-test-apt.lock';
const WAIT_SECONDS = 900;

/**
 * The program at `path`, installed first from Debian's `pkg` when it is missing and this process is root
 * (`apt-get update`, then `apt-get install -y`, as on a fresh Debian machine); otherwise an error that says
 * what to install. Never a skip: a test that silently does not run proves nothing.
 */
export async function ensureDebianProgram(path: string, pkg: string): Promise<string> {
  if (existsSync(path)) return path;
  await aptInstall(path, pkg);
  if (!existsSync(path)) throw new Error(`apt-get installed ${pkg}, yet ${path} is still missing`);
  return path;
}

/** Where `command` is on PATH (or in the sbin and bin directories root has), if anywhere. */
function onPath(command: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(delimiter).concat(['/usr/sbin', '/usr/bin', '/sbin', '/bin']);
  return dirs.map((dir) => join(dir, command)).find((candidate) => existsSync(candidate));
}

/** As ensureDebianProgram, for a command looked up on PATH (`ip` of iproute2, `openssl`). */
export async function ensureDebianCommand(command: string, pkg: string): Promise<string> {
  const found = onPath(command);
  if (found) return found;
  await aptInstall(command, pkg);
  const installed = onPath(command);
  if (!installed) throw new Error(`apt-get installed ${pkg}, yet ${command} is still not on PATH`);
  return installed;
}

async function aptInstall(path: string, pkg: string): Promise<void> {
  if (process.getuid?.() !== 0) {
    throw new Error(
      `${path} is missing and this test is not running as root, so it cannot install it: ` +
        `run \`apt-get update && apt-get install -y ${pkg}\` as root (Debian), or run the suite as root`,
    );
  }
  const apt = `apt-get -o DPkg::Lock::Timeout=${WAIT_SECONDS}`;
  const script = `${apt} update -qq && ${apt} install -y -qq --no-install-recommends ${pkg}`;
  try {
    await run('flock', ['-w', String(WAIT_SECONDS), APT_LOCK, 'sh', '-c', script], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeout: 2 * WAIT_SECONDS * 1000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(
      `${path} is missing and \`apt-get install -y ${pkg}\` failed: ${stderr?.trim() || message}; ` +
        `install Debian's ${pkg} package by hand`,
      { cause: error },
    );
  }
}
