import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveHelm, resolvePrometheusTool } from '@khrun/devkit/local/binaries.ts';
import { dump, load } from 'js-yaml';
import { helmTemplate, MONITORING_API } from '../../../infra/helm/render-deploy.ts';
import { retryWithBackoff } from '../../../lib/core/backoff.ts';
import { repoRoot } from './khrun.ts';

// Prometheus' own tools for the chart's monitoring objects: promtool and the server, built from the Go
// module proxy through infra/build/prometheus and cached like helm (infra/devkit/src/local/binaries.ts).

const run = promisify(execFile);

export interface MonitoringTools {
  helm: string;
  promtool: string;
  prometheus: string;
}

/** helm, promtool and prometheus, each built once per machine (minutes on 2 cores, then cached). */
export async function monitoringTools(onProgress: (line: string) => void): Promise<MonitoringTools> {
  const opts = {
    cacheDir:
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun'),
    buildDir: join(repoRoot, 'infra/build'),
    onProgress,
  };
  // One after another: two Go builds at once on 2 cores take longer than both in turn.
  const helm = await resolveHelm(opts);
  const promtool = await resolvePrometheusTool(opts, 'promtool');
  const prometheus = await resolvePrometheusTool(opts, 'prometheus');
  return { helm, promtool, prometheus };
}

/**
 * The rule file Prometheus reads for the chart's PrometheusRule rendered with these values: its
 * `spec.groups`, as `{groups: [...]}`.
 */
export async function renderedRuleFile(helm: string, set: string[] = []): Promise<string> {
  const rendered = await helmTemplate(helm, repoRoot, {
    set: ['monitoring.rules.enabled=true', ...set],
    showOnly: 'prometheusrule.yaml',
    apiVersions: [MONITORING_API],
  });
  const rule = load(rendered) as { kind: string; spec: { groups: unknown[] } };
  if (rule?.kind !== 'PrometheusRule') throw new Error(`no PrometheusRule in:\n${rendered}`);
  return dump({ groups: rule.spec.groups }, { lineWidth: -1 });
}

/** `promtool ARGS` in dir: its exit code and output (a failing check or test is an answer, not a throw). */
export async function promtool(
  bin: string,
  args: string[],
  dir: string,
): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(bin, args, { cwd: dir, maxBuffer: 8 * 1024 * 1024 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string; message: string };
    if (typeof e.code !== 'number') throw error;
    return { code: e.code, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** A port free on 127.0.0.1 right now (Prometheus takes no port 0 it could report back). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

export interface RunningPrometheus {
  base: string;
  child: ChildProcess;
  output: () => string;
  /** SIGTERM, then SIGKILL after graceMs; resolves once it exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * A real Prometheus on 127.0.0.1 with this configuration and rule file, its TSDB in dir; ready once
 * /-/ready answers 200 (bounded by timeoutMs).
 */
export async function startPrometheus(opts: {
  bin: string;
  dir: string;
  config: string;
  rules: string;
  timeoutMs: number;
}): Promise<RunningPrometheus> {
  await writeFile(join(opts.dir, 'prometheus.yml'), opts.config);
  await writeFile(join(opts.dir, 'rules.yaml'), opts.rules);
  const port = await freeLoopbackPort();
  const child = spawn(
    opts.bin,
    [
      `--config.file=${join(opts.dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(opts.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { cwd: opts.dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout?.on('data', (c: Buffer) => {
    out += c;
  });
  child.stderr?.on('data', (c: Buffer) => {
    out += c;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (graceMs = 5_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const base = `http://127.0.0.1:${port}`;
  try {
    await retryWithBackoff(
      'Prometheus to be ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}):\n${out}`);
        return (await fetch(`${base}/-/ready`)).status === 200 ? true : undefined;
      },
      { initialMs: 50, maxMs: 500, deadlineEpochMs: Date.now() + opts.timeoutMs },
    );
  } catch (error) {
    await stop();
    throw new Error(`Prometheus did not become ready:\n${out}`, { cause: error });
  }
  return { base, child, output: () => out, stop };
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** GET /api/v1/<path>: the `data` of a success, else a thrown error with Prometheus' own message. */
export async function promApi<T>(base: string, path: string): Promise<T> {
  const res = await fetch(`${base}/api/v1/${path}`);
  const body = (await res.json()) as { status: string; data: T; error?: string; errorType?: string };
  if (body.status !== 'success') throw new Error(`${path}: ${body.errorType}: ${body.error}`);
  return body.data;
}

/** An instant query's vector. */
export async function promQuery(base: string, query: string): Promise<PromSample[]> {
  const data = await promApi<{ resultType: string; result: PromSample[] }>(
    base,
    `query?query=${encodeURIComponent(query)}`,
  );
  return data.resultType === 'vector' ? data.result : [];
}
