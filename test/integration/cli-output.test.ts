import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { bashComplete } from '../helpers/shells.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { kubectlPath } from './helpers/deploy.ts';
import { createCheck, type KhrunResult, nodeContainer, repoRoot } from './helpers/khrun.ts';

// With -o json|yaml, stdout holds only the document, for every command that has -o, against the real
// local cluster with the log level at DEBUG (the most log lines there are): stdout must parse as JSON or
// YAML and hold nothing else, and the log lines must be on stderr. Then the shell completion's dynamic
// part: check names and namespaces listed through the real kubectl.

const kc = adminKubeConfig();
let ns: string;
let dir: string;

/** A check that reports OK after a line on its own stdout, through the kh-run-uuid header. */
const REPORTS = nodeContainer(
  "console.log('checking'); fetch(process.env.KH_REPORTING_URL, { method: 'POST', headers: { 'kh-run-uuid': process.env.KH_RUN_UUID }, body: JSON.stringify({ OK: true, Errors: [] }) }).then((r) => console.log(r.status));",
);

beforeAll(async () => {
  ns = await freshNamespace(kc, 'cli-out');
  dir = await mkdtemp(join(tmpdir(), 'khrun-cli-out-'));
  for (const name of ['logs', 'second', 'third']) await createCheck(kc, ns, name, { containers: [REPORTS] });
  // The runner PodTemplate the tick and sync read, in this namespace: its Jobs run a command that exits.
  await kc.makeApiClient(CoreV1Api).createNamespacedPodTemplate({
    namespace: ns,
    body: {
      metadata: { name: 'khrun-runner' },
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'runner', image: 'node:20-alpine', command: [process.execPath, '-e', '0'] }],
        },
      },
    },
  });
}, 120_000);
afterAll(async () => {
  await dropNamespace(kc, ns);
  await rm(dir, { recursive: true, force: true });
});

function khrun(args: string[], env: Record<string, string> = {}): Promise<KhrunResult> {
  const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), ...args], {
    env: {
      ...process.env,
      KUBECONFIG: inject('kubeconfigPath'),
      KHRUN_REPORT_HOST: inject('hostIp'),
      POWERTOOLS_LOG_LEVEL: 'DEBUG',
      ...env,
    },
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

/** Every non-empty stdout line is a JSON document (one per line, as jq reads a stream); nothing else. */
function jsonLines(r: KhrunResult): Record<string, unknown>[] {
  expect(r.stdout.trim(), r.stderr.slice(-2000)).not.toBe('');
  return r.stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * stdout is YAML documents only, each a mapping with these keys and none of a log line's (a JSON log line
 * is valid YAML too, so parsing alone would not catch one).
 */
function yamlDocuments(r: KhrunResult, keys: string[]): Record<string, unknown>[] {
  const docs = parseAllDocuments(r.stdout);
  expect(docs.flatMap((d) => d.errors.map((e) => e.message))).toEqual([]);
  const values = docs.map((d) => d.toJS() as Record<string, unknown>);
  for (const v of values) {
    expect(Object.keys(v), r.stdout).toEqual(expect.arrayContaining(keys));
    expect(Object.keys(v), r.stdout).not.toContain('level');
  }
  return values;
}

/** stdout is one JSON document (on one line or, as status and convert print it, indented), nothing else. */
function jsonDocument(r: KhrunResult): Record<string, unknown> {
  expect(r.stdout.trim(), r.stderr.slice(-2000)).not.toBe('');
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** The log lines on stderr (Powertools' JSON), by message. */
const logMessages = (r: KhrunResult) =>
  r.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => (JSON.parse(l) as { message: string }).message);

describe('-o json|yaml against the real cluster: the document alone on stdout, logs on stderr', () => {
  it('run -o json on a check that logs: one JSON document; outcome recorded is on stderr', async () => {
    const r = await khrun(['run', '--check', 'logs', '-n', ns, '-o', 'json']);
    expect(r.code, r.stderr).toBe(0);
    expect(jsonLines(r)).toEqual([
      expect.objectContaining({ check: `${ns}/logs`, result: 'recorded', ok: true }),
    ]);
    expect(logMessages(r)).toContain('outcome recorded');
  }, 120_000);

  it('run -o yaml: one YAML document', async () => {
    const r = await khrun(['run', '--check', 'second', '-n', ns, '-o', 'yaml']);
    expect(r.code, r.stderr).toBe(0);
    const docs = yamlDocuments(r, ['check', 'result', 'kind', 'ok']);
    expect(docs).toEqual([expect.objectContaining({ check: `${ns}/second`, result: 'recorded' })]);
  }, 120_000);

  it('a batch (run --check A --check B -o json): a JSON line per check; batch finished on stderr', async () => {
    const r = await khrun(['run', '--check', 'logs', '--check', 'third', '-n', ns, '-o', 'json']);
    expect(r.code, r.stderr).toBe(0);
    expect(jsonLines(r).map((e) => [e.check, e.result])).toEqual([
      [`${ns}/logs`, 'recorded'],
      [`${ns}/third`, 'recorded'],
    ]);
    expect(logMessages(r)).toContain('batch finished');
  }, 180_000);

  it('sync --dry-run -o json and -o yaml: the CronJobs only', async () => {
    const json = await khrun(['sync', '--dry-run', '-n', ns, '--runner-namespace', ns, '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    const [doc] = jsonLines(json);
    expect((doc?.results as unknown[] | undefined)?.length).toBe(3);
    const yaml = await khrun(['sync', '--dry-run', '-n', ns, '--runner-namespace', ns, '-o', 'yaml']);
    expect(yaml.code, yaml.stderr).toBe(0);
    const cronJobs = yamlDocuments(yaml, ['apiVersion', 'kind', 'metadata', 'spec']);
    expect(cronJobs.map((c) => c.kind)).toEqual(['CronJob', 'CronJob', 'CronJob']);
  }, 120_000);

  it('status -o json and -o yaml: the status document only', async () => {
    const json = await khrun(['status', '-n', ns, '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    const doc = jsonDocument(json);
    expect(Object.keys((doc?.CheckDetails as object) ?? {})).toHaveLength(3);
    const yaml = await khrun(['status', '-n', ns, '-o', 'yaml']);
    expect(yaml.code, yaml.stderr).toBe(0);
    expect(yamlDocuments(yaml, ['CheckDetails', 'OK'])).toHaveLength(1);
  }, 120_000);

  it('convert -o json from the cluster: the converted resources only, findings on stderr', async () => {
    const r = await khrun(['convert', 'khchecks', '-n', ns, '-o', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = jsonDocument(r);
    expect((doc?.items as { kind: string }[] | undefined)?.map((i) => i.kind)).toEqual([
      'HealthCheck',
      'HealthCheck',
      'HealthCheck',
    ]);
    expect(r.stderr).toMatch(/^convert: converted 3/m);
  }, 120_000);

  it('version, takeover and handback --dry-run: a document, or nothing on stdout when there is nothing to act on', async () => {
    const version = await khrun(['version', '-o', 'json']);
    expect(jsonLines(version)).toEqual([expect.objectContaining({ version: expect.any(String) })]);
    // No Kuberhealthy runs in this cluster now: exit 2, the reason on stderr, stdout empty.
    for (const command of ['takeover', 'handback']) {
      const r = await khrun([command, '--dry-run', '-o', 'json']);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(new RegExp(`^khrun: ${command}: no (running )?Kuberhealthy`));
    }
  }, 120_000);

  // Last: each adds a check that is due at once, which the tick dispatches in a Job and logs.
  it.each(['json', 'yaml'] as const)(
    'tick -o %s: the decisions only; dispatched is logged on stderr',
    async (output) => {
      await createCheck(kc, ns, `due-${output}`, { containers: [REPORTS] });
      const r = await khrun([
        'tick',
        '-n',
        ns,
        '--runner-namespace',
        ns,
        '--first-run-jitter',
        '0s',
        '-o',
        output,
      ]);
      expect(r.code, r.stderr).toBe(0);
      const [doc] = output === 'json' ? jsonLines(r) : yamlDocuments(r, ['entries']);
      const entries = (doc?.entries ?? []) as { check: string; result: string }[];
      expect(entries.find((e) => e.check === `${ns}/due-${output}`)?.result, r.stdout).toBe('dispatched');
      expect(logMessages(r)).toContain('dispatched');
    },
    120_000,
  );
});

describe('completion through the real kubectl', () => {
  it('bash completes check names and namespaces from the cluster the line names', async () => {
    const script = join(dir, 'khrun.bash');
    const completion = await khrun(['completion', 'bash']);
    await writeFile(script, completion.stdout);
    const env = {
      ...process.env,
      PATH: `${dirname(await kubectlPath())}:${process.env.PATH}`,
      KUBECONFIG: inject('kubeconfigPath'),
    };
    // kubectl must be the one built for this cluster, first on PATH.
    // The five khchecks of the namespace (the tick cases added two), as kubectl lists them.
    expect(await bashComplete(script, ['khrun', 'run', '-n', ns, '--check', ''], env)).toEqual([
      'due-json',
      'due-yaml',
      'logs',
      'second',
      'third',
    ]);
    expect(await bashComplete(script, ['khrun', 'describe', '--namespace', '=', ns, 's'], env)).toEqual([
      'second',
    ]);
    expect(await bashComplete(script, ['khrun', 'status', '-n', ns.slice(0, -2)], env)).toContain(ns);
  }, 120_000);
});
