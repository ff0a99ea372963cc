import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { V1CronJob } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { syncCommand } from '../../lib/commands/sync.ts';
import { offlineSync, SyncFileError } from '../../lib/commands/sync-files.ts';
import { silentLog } from '../../lib/core/log.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../../lib/schedule/run-job.ts';

// `khrun sync --dry-run -f FILE`: the CronJobs of khcheck files rendered with no cluster at all (the
// kubeconfig points nowhere, and no API server is asked), from the runner PodTemplate in the files when
// they hold it, else a placeholder; -f without --dry-run is refused.

const run = promisify(execFile);
const khrun = resolve(import.meta.dirname, '../../functions/khrun.mjs');
const ROOT = resolve(import.meta.dirname, '../..');
const SPAWN_MS = 60_000;
const ref = { namespace: 'kuberhealthy', name: 'khrun-runner' };

const CHECKS = `apiVersion: comcast.github.io/v1
kind: KuberhealthyCheck
metadata: {name: ping}
spec: {runInterval: 5m, timeout: 1m, podSpec: {containers: [{name: c, image: busybox}]}}
---
apiVersion: comcast.github.io/v1
kind: KuberhealthyCheck
metadata: {name: dns, namespace: team-a}
spec: {runInterval: 7m, podSpec: {containers: [{name: c, image: busybox}]}}
---
apiVersion: kuberhealthy.github.io/v2
kind: HealthCheck
metadata: {name: web, namespace: team-a}
spec: {runInterval: 1h, podSpec: {spec: {containers: [{name: c, image: busybox}]}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
`;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'khrun-sync-'));
  await writeFile(join(dir, 'checks.yaml'), CHECKS);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function khrunSync(args: string[], input?: string) {
  const child = run(process.execPath, [khrun, 'sync', ...args], {
    cwd: dir,
    env: { ...process.env, KUBECONFIG: '/nonexistent/kubeconfig', POWERTOOLS_LOG_LEVEL: 'DEBUG' },
  });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  try {
    const { stdout, stderr } = await child;
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('khrun sync --dry-run -f, offline', () => {
  it(
    '-o yaml: the CronJobs only, as YAML documents, in the scope of -n; no kubeconfig read, no API server asked',
    async () => {
      const r = await khrunSync(['--dry-run', '-f', 'checks.yaml', '-n', 'checks', '-o', 'yaml']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      const docs = parseAllDocuments(r.stdout);
      expect(docs.flatMap((d) => d.errors)).toEqual([]);
      const cronJobs = docs.map((d) => d.toJS() as V1CronJob);
      // ping takes -n's namespace; dns and web name team-a, outside -n checks.
      expect(cronJobs.map((c) => [c.kind, c.metadata?.namespace, c.metadata?.name])).toEqual([
        ['CronJob', 'checks', 'khrun-ping'],
      ]);
      expect(cronJobs[0]?.spec?.schedule?.split(' ')).toHaveLength(5);
      // The notes are YAML comments: they say it is offline and that the runner is a placeholder.
      expect(r.stdout).toMatch(/^# note: the runner PodTemplate khrun\/khrun-runner is not in the files/m);
      expect(r.stdout).toMatch(/^# note: offline \(-f\): no cluster was read/m);
      const container = cronJobs[0]?.spec?.jobTemplate.spec?.template.spec?.containers[0];
      expect(container?.image).toBe('<image of PodTemplate khrun/khrun-runner>');
    },
    SPAWN_MS,
  );

  it(
    '-o json from stdin, with the install’s own runner PodTemplate (infra/deploy) in the input',
    async () => {
      const deploy = await readFile(join(ROOT, 'infra/deploy/runner.yaml'), 'utf8');
      const r = await khrunSync(['--dry-run', '-f', '-', '-f', 'checks.yaml', '-o', 'json'], deploy);
      expect(r.code, r.stderr).toBe(0);
      const doc = JSON.parse(r.stdout) as { notes: string[]; results: { cronJob: V1CronJob }[] };
      expect(doc.notes).toHaveLength(1);
      expect(doc.notes[0]).toMatch(/^offline/);
      const image = doc.results[0]?.cronJob.spec?.jobTemplate.spec?.template.spec?.containers[0]?.image;
      expect(image).toMatch(/^ghcr\.io\/khrun\/khrun:/);
      expect(doc.results.map((x) => x.cronJob.metadata?.namespace)).toEqual(['default', 'team-a', 'team-a']);
    },
    SPAWN_MS,
  );

  it(
    '-f without --dry-run is a usage error naming what to do; a missing file is exit 2',
    async () => {
      const r = await khrunSync(['-f', 'checks.yaml']);
      expect(r).toMatchObject({ code: 2, stdout: '' });
      expect(r.stderr).toMatch(
        /^khrun: --filename: renders the CronJobs of khcheck files offline.*add --dry-run/,
      );
      expect(r.stderr.split('\n')[1]).toBe("See 'khrun sync --help' for usage.");
      const missing = await khrunSync(['--dry-run', '-f', 'nope.yaml']);
      expect(missing).toMatchObject({ code: 2, stdout: '' });
      expect(missing.stderr).toMatch(/^khrun: sync: nope\.yaml: cannot be read/);
    },
    SPAWN_MS,
  );
});

describe('offlineSync', () => {
  const read = (files: Record<string, string>) => async (p: string) => {
    const text = files[p];
    if (text === undefined) throw new Error('ENOENT');
    return text;
  };

  it('scopes by -n, and nothing can be applied or deleted', async () => {
    const offline = await offlineSync({
      files: ['c'],
      namespace: 'checks',
      template: ref,
      readInput: read({ c: CHECKS }),
    });
    expect((await offline.kube.listChecks({ namespaces: ['team-a'] })).map((c) => c.metadata.name)).toEqual([
      'dns',
    ]);
    expect(await offline.kube.listManagedCronJobs('all')).toEqual([]);
    await expect(offline.kube.applyCronJob({})).rejects.toThrow(/dry run/);
    const lines: string[] = [];
    await syncCommand({
      ...offline,
      scope: { namespaces: ['checks'] },
      jobOptions: DEFAULT_RUN_JOB_OPTIONS,
      dryRun: true,
      output: 'text',
      log: silentLog,
      write: (l) => lines.push(l),
    });
    expect(lines.at(-1)).toBe('sync: 1 CronJobs to apply, 0 to delete');
  });

  it('a file that is not YAML is a SyncFileError', async () => {
    await expect(
      offlineSync({ files: ['bad'], namespace: 'x', template: ref, readInput: read({ bad: 'a: [' }) }),
    ).rejects.toThrow(SyncFileError);
  });
});
