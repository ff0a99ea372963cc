import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './khrun.ts';

const run = promisify(execFile);

/**
 * A checker binary built on Kuberhealthy v3.0.0's Go checkclient (infra/build/go-checkclient-v3), cached
 * by the hash of its go.sum and source so it is built once per machine, as goCheckerBinary is for v2.7.1's.
 * Arguments: `success [DELAY]`, `fail MESSAGE`, `silent`.
 */
export async function goCheckerV3Binary(): Promise<string> {
  const moduleDir = join(repoRoot, 'infra/build/go-checkclient-v3');
  const hash = createHash('sha256')
    .update(await readFile(join(moduleDir, 'go.sum')))
    .update(await readFile(join(moduleDir, 'main.go')))
    .digest('hex')
    .slice(0, 12);
  const cache =
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');
  const out = join(cache, 'bin', `go-checkclient-v3-${hash}`);
  try {
    await access(out);
    return out;
  } catch {
    await mkdir(join(cache, 'bin'), { recursive: true });
    await run('go', ['build', '-trimpath', '-o', out, '.'], {
      cwd: moduleDir,
      env: { ...process.env, CGO_ENABLED: '0' },
      timeout: 20 * 60_000,
    });
    return out;
  }
}
