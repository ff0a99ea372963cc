import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './bench-cluster.ts';

const run = promisify(execFile);

/**
 * The checker the scale figures run: a program built on Kuberhealthy v2.7.1's own Go checkclient
 * (infra/build/go-checkclient) that reports success at once and exits. A few MiB per process where a Node
 * checker takes about 40: thousands of checker pods are local processes on this machine, and the figures
 * are about khrun's runners, not about the checker. Cached as the integration tests cache it (same path).
 */
export async function goCheckerBinary(cacheDir: string): Promise<string> {
  const moduleDir = join(repoRoot, 'infra/build/go-checkclient');
  const hash = createHash('sha256')
    .update(await readFile(join(moduleDir, 'go.sum')))
    .update(await readFile(join(moduleDir, 'main.go')))
    .digest('hex')
    .slice(0, 12);
  const out = join(cacheDir, 'bin', `go-checkclient-${hash}`);
  try {
    await access(out);
  } catch {
    await mkdir(join(cacheDir, 'bin'), { recursive: true });
    await run('go', ['build', '-trimpath', '-o', out, '.'], {
      cwd: moduleDir,
      env: { ...process.env, CGO_ENABLED: '0' },
      timeout: 20 * 60_000,
    });
  }
  return out;
}
