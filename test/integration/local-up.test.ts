import { execFileSync, spawn } from 'node:child_process';
import { access, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api, KubeConfig, loadYaml, type V1Job, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_HOST_EXTENSION } from '../../lib/config/kubeconfig-report-host.ts';
import { waitForSet } from '../../lib/kube/list-watch.ts';
import { readLastOutcome } from '../../lib/state/khstate.ts';
import {
  createCheck,
  type KhrunResult,
  nodeContainer,
  npmClientEnv,
  outcomeOf,
  readState,
  repoRoot,
} from './helpers/khrun.ts';

const lockPath = join(tmpdir(), 'khrun-local-cluster-0.lock');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Slot 0 belongs to `khrun local up`; a developer's own running cluster makes this test meaningless. */
async function slotZeroHolder(): Promise<number | undefined> {
  const record = JSON.parse(await readFile(lockPath, 'utf8').catch(() => '{}')) as { pid?: number };
  return record.pid && alive(record.pid) ? record.pid : undefined;
}

function startLocalUp(dir: string) {
  const child = spawn(
    process.execPath,
    [join(repoRoot, 'functions/khrun.mjs'), 'local', 'up', '--dir', dir],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const line = stdout.split('\n').find((l) => l.startsWith('local cluster ready'));
      if (line) resolve(line);
    });
    void exited.then((code) =>
      reject(new Error(`khrun local up exited (${code}) before it was ready:\n${stderr}`)),
    );
  });
  // The second instance is expected never to be ready: its rejection is handled here, and still seen by
  // anyone who awaits `ready`.
  ready.catch(() => undefined);
  return { child, ready, exited, output: () => ({ stdout, stderr }) };
}

/**
 * `khrun run` as a person runs it from a laptop shell: only the kubeconfig flag, none of the variables that
 * say where checker pods report (the test process may carry them).
 */
function khrunRunFromLaptop(args: string[]): Promise<KhrunResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, POWERTOOLS_LOG_LEVEL: 'INFO' };
  for (const name of [
    'KUBECONFIG',
    'KHRUN_REPORT_HOST',
    'KHRUN_REPORT_PORT',
    'POD_IP',
    'POD_NAME',
    'KH_EXTERNAL_REPORTING_URL',
    'CHECK_NAME',
    'CHECK_NAMESPACE',
  ])
    delete env[name];
  const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), 'run', ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const dirs: string[] = [];
let skipReason: string | undefined;
let dir: string;
let first: ReturnType<typeof startLocalUp> | undefined;
let kc: KubeConfig;

beforeAll(async () => {
  const holder = await slotZeroHolder();
  if (holder) {
    if (process.env.CI) throw new Error(`slot 0 is held by pid ${holder} on a CI machine`);
    skipReason = `a local cluster of yours is running (pid ${holder}); stop it to run this test`;
    return;
  }
  dir = await mkdtemp(join(tmpdir(), 'khrun-local-up-'));
  dirs.push(dir);
  first = startLocalUp(dir);
  const line = await first.ready;
  expect(line).toMatch(new RegExp(`export KUBECONFIG=${dir}/kubeconfig`));
  kc = new KubeConfig();
  kc.loadFromFile(join(dir, 'kubeconfig'));
}, 240_000);

afterAll(async () => {
  first?.child.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('khrun local up', () => {
  it('`khrun run --kubeconfig` from another terminal records the outcome while no pod is running', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const core = kc.makeApiClient(CoreV1Api);
    // The case this guards: with no pod on the cluster its host bridge has no carrier (no veth is
    // attached), so the report endpoint is bound to an address of a link that is down.
    expect((await core.listPodForAllNamespaces()).items).toEqual([]);
    expect(execFileSync('ip', ['-o', 'link', 'show', 'khrun0'], { encoding: 'utf8' })).toMatch(/NO-CARRIER/);
    await core.createNamespace({ body: { metadata: { name: 'laptop' } } });
    await waitForSet({
      kc,
      path: '/api/v1/namespaces/laptop/serviceaccounts',
      fieldSelector: 'metadata.name=default',
      timeoutMs: 30_000,
      description: 'the default ServiceAccount of namespace laptop',
      decide: (items) => (items.size > 0 ? true : undefined),
    });
    await createCheck(kc, 'laptop', 'from-laptop', {
      // The npm client sends no header: the report is identified by the pod's source IP.
      containers: [nodeContainer("require('kuberhealthy').ReportSuccess();", { env: npmClientEnv })],
    });
    const result = await khrunRunFromLaptop([
      '--check',
      'from-laptop',
      '-n',
      'laptop',
      '--kubeconfig',
      join(dir, 'kubeconfig'),
      '--output',
      'json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(outcomeOf(result)).toMatchObject({ result: 'recorded', kind: 'Succeeded', ok: true });
    expect(readLastOutcome(await readState(kc, 'laptop', 'from-laptop'))).toMatchObject({
      kind: 'Succeeded',
    });
  }, 180_000);

  it('against a kubeconfig without the report host, `khrun run --local` exits 2 and says what to set; without --local it goes to the cluster, where khrun is not installed', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    // The same cluster as a real one looks: its kubeconfig says nothing about where pods reach this machine.
    const doc = loadYaml<{ clusters: Array<{ cluster: { extensions?: Array<{ name: string }> } }> }>(
      await readFile(join(dir, 'kubeconfig'), 'utf8'),
    );
    for (const c of doc.clusters) delete c.cluster.extensions;
    const plain = join(dir, 'kubeconfig-without-report-host');
    await writeFile(plain, JSON.stringify(doc), { mode: 0o600 });
    expect(await readFile(plain, 'utf8')).not.toContain(REPORT_HOST_EXTENSION);
    const args = ['--check', 'from-laptop', '-n', 'laptop', '--kubeconfig', plain];

    const local = await khrunRunFromLaptop([...args, '--local']);
    expect(local.code).toBe(2);
    const message = local.stderr.split('\n')[0];
    expect(message).toMatch(
      /^khrun: KHRUN_REPORT_HOST: cannot tell at which address checker pods can reach this runner/,
    );
    expect(message).toContain('pass --report-host or set KHRUN_REPORT_HOST');
    expect(message).toContain('KH_EXTERNAL_REPORTING_URL');

    // Without --local the run would be a runner Job from khrun's PodTemplate (docs/rerun.md): `khrun local
    // up` installs no khrun, so it says what to install or which flag names where khrun is.
    const inCluster = await khrunRunFromLaptop(args);
    expect(inCluster.code, inCluster.stderr).toBe(2);
    expect(inCluster.stderr).toMatch(
      /khrun: the runner PodTemplate khrun\/khrun-runner does not exist.*khrun is not installed in namespace khrun/,
    );
    expect(inCluster.stderr).toContain('--runner-namespace');
    expect(inCluster.stdout).toBe('');
    // Refused before anything ran: no new run of the check was claimed.
    expect(readLastOutcome(await readState(kc, 'laptop', 'from-laptop'))).toMatchObject({
      kind: 'Succeeded',
    });
  }, 60_000);

  it('runs image khrun from the checkout as it is now, without npm run build (the bundle local up keeps current)', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const core = kc.makeApiClient(CoreV1Api);
    // The image's ENTRYPOINT with args: what the shipped tick's and runner's pods run.
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'khrun-image' },
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'khrun', image: 'khrun:0.1.0', args: ['version', '-o', 'json'] }],
        },
      },
    });
    const phase = await waitForSet<V1Pod, string>({
      kc,
      path: '/api/v1/namespaces/default/pods',
      fieldSelector: 'metadata.name=khrun-image',
      timeoutMs: 60_000,
      description: 'the khrun image pod to finish',
      decide: (items) => {
        const p = [...items.values()][0]?.status?.phase;
        return p === 'Succeeded' || p === 'Failed' ? p : undefined;
      },
    });
    const log = await core.readNamespacedPodLog({ name: 'khrun-image', namespace: 'default' });
    expect(phase, String(log)).toBe('Succeeded');
    expect(JSON.parse(String(log).trim())).toMatchObject({
      version: expect.any(String),
      node: process.version,
    });
    // What it ran: local up's copy of the checkout's current CLI bundle, not dist/ (npm run build).
    const stamp = JSON.parse(await readFile(join(repoRoot, '.khrun/cli.json'), 'utf8')) as { bundle: string };
    expect(await readFile(join(repoRoot, '.khrun/image-dist/source'), 'utf8')).toBe(stamp.bundle);
  }, 120_000);

  it('runs a Job with its kubeconfig, refuses a second instance, and leaves nothing behind on SIGINT', async (ctx) => {
    if (skipReason || !first) ctx.skip(skipReason);
    const lock = JSON.parse(await readFile(lockPath, 'utf8')) as { dir: string; childPids: number[] };
    expect(lock.childPids.length).toBeGreaterThanOrEqual(4);

    const job: V1Job = {
      metadata: { name: 'hello' },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [
              { name: 'hello', image: 'busybox', command: ['sh', '-c', 'echo hello from a local process'] },
            ],
          },
        },
      },
    };
    await kc.makeApiClient(BatchV1Api).createNamespacedJob({ namespace: 'default', body: job });
    await waitForSet<V1Job, true>({
      kc,
      path: '/apis/batch/v1/namespaces/default/jobs',
      fieldSelector: 'metadata.name=hello',
      timeoutMs: 60_000,
      description: 'the Job to complete',
      decide: (items) =>
        [...items.values()].some((j) =>
          j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'),
        )
          ? true
          : undefined,
    });

    const second = await mkdtemp(join(tmpdir(), 'khrun-local-up-2-'));
    dirs.push(second);
    const other = startLocalUp(second);
    expect(await other.exited).not.toBe(0);
    expect(other.output().stdout + other.output().stderr).toMatch(
      /a local cluster is already running \(pid \d+/,
    );

    const up = first as ReturnType<typeof startLocalUp>;
    up.child.kill('SIGINT');
    expect(await up.exited).toBe(0);
    for (const pid of lock.childPids) expect(alive(pid), `pid ${pid} still running`).toBe(false);
    await expect(access(lock.dir)).rejects.toThrow();
    await expect(access(lockPath)).rejects.toThrow();
    const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
    expect(netns).not.toMatch(/^khrun0-/m);
    expect(execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })).not.toMatch(/ khrun0:/);
  }, 180_000);
});
