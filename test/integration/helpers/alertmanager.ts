import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveAlertmanager } from '@khrun/devkit/local/binaries.ts';
import { freePort } from '@khrun/devkit/local/free-port.ts';
import { retryWithBackoff } from '../../../lib/core/backoff.ts';
import { repoRoot } from './khrun.ts';

/** An alert as Alertmanager's `GET /api/v2/alerts` lists it (gettableAlert). */
export interface GettableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  status: { state: 'active' | 'suppressed' | 'unprocessed' };
  fingerprint: string;
}

/**
 * A real Alertmanager (built from the Go module proxy, cached in ~/.cache/khrun) on 127.0.0.1, with no
 * cluster peers, routing every alert to `webhookUrl` at once (group_wait 0s, group_interval 1s) with its
 * resolution. Stop it with stop().
 */
export async function startAlertmanager(webhookUrl: string) {
  const binary = await resolveAlertmanager({
    cacheDir:
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun'),
    buildDir: join(repoRoot, 'infra/build'),
    onProgress: (line) => console.log(`[build] ${line}`),
  });
  const dir = await mkdtemp(join(tmpdir(), 'khrun-am-'));
  const config = join(dir, 'alertmanager.yml');
  await writeFile(
    config,
    [
      'route:',
      '  receiver: hook',
      '  group_by: [alertname, namespace, check, khrun_incident]',
      '  group_wait: 0s',
      '  group_interval: 1s',
      '  repeat_interval: 1h',
      'receivers:',
      '  - name: hook',
      '    webhook_configs:',
      `      - url: ${webhookUrl}`,
      '        send_resolved: true',
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    binary,
    [
      `--config.file=${config}`,
      `--storage.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--cluster.listen-address=',
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await retryWithBackoff(
    `Alertmanager at ${url} to be ready`,
    async () => {
      if (child.exitCode !== null) throw new Error(`alertmanager exited ${child.exitCode}: ${stderr}`);
      const res = await fetch(`${url}/-/ready`).catch(() => undefined);
      return res?.ok ? true : undefined;
    },
    { initialMs: 50, maxMs: 500, deadlineEpochMs: Date.now() + 30_000 },
  );
  return {
    url,
    /** The alerts Alertmanager holds (active, not yet resolved), as its API v2 lists them. */
    async alerts(filter?: Record<string, string>): Promise<GettableAlert[]> {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(filter ?? {})) q.append('filter', `${k}="${v}"`);
      const res = await fetch(`${url}/api/v2/alerts?${q}`);
      if (!res.ok) throw new Error(`GET /api/v2/alerts: ${res.status} ${await res.text()}`);
      return (await res.json()) as GettableAlert[];
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
