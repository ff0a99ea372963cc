import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The installed Go version, or undefined when there is no go command. */
export async function goVersion(): Promise<string | undefined> {
  try {
    const { stdout } = await run('go', ['version']);
    return stdout.trim();
  } catch {
    return undefined;
  }
}

/**
 * `go build` of one package from a committed wrapper module, static and trimmed as upstream builds it.
 * Progress: `-v` prints each package as it is compiled; a line per 100 packages is forwarded.
 */
export async function goBuild(opts: {
  moduleDir: string;
  pkg: string;
  output: string;
  ldflags: string;
  onProgress: (line: string) => void;
  signal?: AbortSignal;
}): Promise<void> {
  const startedMs = Date.now();
  const child = spawn(
    'go',
    ['build', '-v', '-trimpath', '-ldflags', opts.ldflags, '-o', opts.output, opts.pkg],
    {
      cwd: opts.moduleDir,
      env: { ...process.env, CGO_ENABLED: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: opts.signal,
    },
  );
  let compiled = 0;
  const tail: string[] = [];
  const lines = createInterface({ input: child.stderr });
  lines.on('line', (line) => {
    tail.push(line);
    if (tail.length > 30) tail.shift();
    if (/^go: downloading /.test(line)) return;
    compiled++;
    if (compiled % 100 === 0) {
      const s = Math.round((Date.now() - startedMs) / 1000);
      opts.onProgress(`  ${opts.pkg}: ${compiled} packages compiled (${s}s)`);
    }
  });
  child.stdout.resume();
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) {
    throw new Error(`go build ${opts.pkg} failed (exit ${code}):\n${tail.join('\n')}`);
  }
  opts.onProgress(`  built ${opts.pkg} in ${Math.round((Date.now() - startedMs) / 1000)}s`);
}
