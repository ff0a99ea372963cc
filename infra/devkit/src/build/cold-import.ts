import { execFile } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MARKER = '__khrun_cold_import_ms=';

export interface ColdImport {
  medianMs: number;
  minMs: number;
  maxMs: number;
  runs: number;
}

/**
 * How long `import()` of a bundle takes in a fresh Node process: module loading, parsing and top-level
 * evaluation, measured with performance.now() around the import inside the child, so Node's own start-up
 * is not counted. Each run is a new process (nothing cached in memory; the file system cache is warm after
 * the first). `argv` is what the module sees as its arguments: the CLI is imported as `khrun help`.
 */
export async function measureColdImport(
  bundlePath: string,
  opts: { runs?: number; argv?: string[]; nodePath?: string; signal?: AbortSignal } = {},
): Promise<ColdImport> {
  const url = pathToFileURL(bundlePath).href;
  const script = [
    `process.argv.splice(1, Infinity, ${JSON.stringify(bundlePath)}, ...${JSON.stringify(opts.argv ?? [])});`,
    'const t0 = performance.now();',
    `await import(${JSON.stringify(url)});`,
    `process.stderr.write('\\n${MARKER}' + (performance.now() - t0) + '\\n');`,
  ].join('\n');
  const samples: number[] = [];
  for (let i = 0; i < (opts.runs ?? 5); i++) {
    const { stderr } = await run(opts.nodePath ?? process.execPath, ['--input-type=module', '-e', script], {
      signal: opts.signal,
      maxBuffer: 16 * 1024 * 1024,
    });
    const line = stderr.split('\n').find((l) => l.startsWith(MARKER));
    if (!line) throw new Error(`importing ${bundlePath} printed no timing:\n${stderr.slice(-2000)}`);
    samples.push(Number(line.slice(MARKER.length)));
  }
  samples.sort((a, b) => a - b);
  return {
    medianMs: samples[Math.floor(samples.length / 2)]!,
    minMs: samples[0]!,
    maxMs: samples[samples.length - 1]!,
    runs: samples.length,
  };
}
