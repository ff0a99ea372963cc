import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createLogger, logPort } from '../../lib/core/log.ts';
import { kubeconfigFile } from './fakes/kubeconfig-file.ts';

// With -o json|yaml, stdout holds only the document; logs (the Powertools logger's JSON lines) and errors
// go to stderr. The real process, spawned, for the commands that need no cluster; the ones that do are
// in test/integration/cli-output.test.ts against the local cluster. Here they also meet an API server
// that does not answer: the error and the log lines on stderr, stdout empty.

const run = promisify(execFile);
const khrun = resolve(import.meta.dirname, '../../functions/khrun.mjs');
const SPAWN_MS = 60_000;

async function spawnCli(args: string[], env: Record<string, string> = {}, cwd?: string) {
  try {
    const { stdout, stderr } = await run(process.execPath, [khrun, ...args], {
      cwd,
      env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'DEBUG', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** stdout is exactly one JSON document (a line), nothing else. */
function onlyJson(stdout: string): unknown {
  expect(stdout.endsWith('\n')).toBe(true);
  return JSON.parse(stdout);
}

/** stdout is YAML documents only: every one parses, and each is a mapping with the keys expected. */
function onlyYaml(stdout: string, keys: string[]): unknown[] {
  const docs = parseAllDocuments(stdout);
  expect(docs.flatMap((d) => d.errors.map((e) => e.message))).toEqual([]);
  const values = docs.map((d) => d.toJS() as Record<string, unknown>);
  for (const v of values) expect(Object.keys(v)).toEqual(expect.arrayContaining(keys));
  return values;
}

let dir: string;
let unreachable: ReturnType<typeof kubeconfigFile>;
const KHCHECK = `apiVersion: comcast.github.io/v1
kind: KuberhealthyCheck
metadata: {name: ping, namespace: checks}
spec: {podSpec: {containers: [{name: c, image: busybox}]}}
`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'khrun-output-'));
  await writeFile(join(dir, 'check.yaml'), KHCHECK);
  await writeFile(join(dir, 'bad.yaml'), KHCHECK.replace('image: busybox', 'imagePullPolicy: Alwayz'));
  // A port nothing listens on, on this machine: the API server "cannot be reached".
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  unreachable = kubeconfigFile({ clusterExtra: { server: `https://127.0.0.1:${port}` } });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  unreachable.remove();
});

describe('the logger of the CLI', () => {
  it('writes every level, INFO and DEBUG included, as one JSON line to the writer it is given', () => {
    const lines: string[] = [];
    const log = logPort(createLogger({ level: 'DEBUG', write: (l) => lines.push(l) }));
    log.debug('d', { a: 1 });
    log.info('outcome recorded', { check: 'ns/x' });
    log.warn('w');
    log.error('e', { error: new Error('boom') });
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ level: 'DEBUG', message: 'd', a: 1 }),
      expect.objectContaining({ level: 'INFO', message: 'outcome recorded', check: 'ns/x' }),
      expect.objectContaining({ level: 'WARN', message: 'w' }),
      expect.objectContaining({
        level: 'ERROR',
        message: 'e',
        error: expect.objectContaining({ message: 'boom' }),
      }),
    ]);
  });
});

describe('-o json|yaml: the document alone on stdout (spawned)', () => {
  it(
    'version',
    async () => {
      const json = await spawnCli(['version', '-o', 'json']);
      expect(onlyJson(json.stdout)).toEqual({ version: expect.any(String), node: process.version });
      expect(onlyYaml((await spawnCli(['version', '-o', 'yaml'])).stdout, ['version', 'node'])).toHaveLength(
        1,
      );
    },
    SPAWN_MS,
  );

  it(
    'convert: the HealthCheck on stdout, the findings on stderr',
    async () => {
      const json = await spawnCli(['convert', '-f', 'check.yaml', '-o', 'json'], {}, dir);
      expect(json.code).toBe(0);
      expect(onlyJson(json.stdout)).toMatchObject({ kind: 'HealthCheck', metadata: { name: 'ping' } });
      expect(json.stderr).toMatch(/^defaulted: KuberhealthyCheck checks\/ping/m);
      const yaml = await spawnCli(['convert', '-f', 'check.yaml', '-o', 'yaml'], {}, dir);
      expect(onlyYaml(yaml.stdout, ['apiVersion', 'kind', 'metadata', 'spec'])).toHaveLength(1);
    },
    SPAWN_MS,
  );

  it(
    'validate: the report, also when a check is invalid (exit 1)',
    async () => {
      const json = await spawnCli(['validate', '-f', 'check.yaml', '-f', 'bad.yaml', '-o', 'json'], {}, dir);
      expect(json.code).toBe(1);
      expect(json.stderr).toBe('');
      expect(onlyJson(json.stdout)).toMatchObject({ valid: false, checks: { valid: 1, invalid: 1 } });
      const yaml = await spawnCli(['validate', '-f', 'check.yaml', '-o', 'yaml'], {}, dir);
      expect(yaml.code).toBe(0);
      expect(onlyYaml(yaml.stdout, ['valid', 'checks', 'skipped', 'documents'])).toHaveLength(1);
    },
    SPAWN_MS,
  );

  it.each([
    [['run', '--check', 'ping', '-n', 'checks', '-o', 'json', '--report-host', '127.0.0.1'], 1],
    [['tick', '-o', 'json'], 1],
    [['sync', '--dry-run', '-o', 'yaml'], 1],
    [['status', '-o', 'json'], 1],
    [['takeover', '--dry-run', '-o', 'json'], 1],
    [['handback', '--dry-run', '-o', 'yaml'], 1],
    [['convert', 'khchecks', '-n', 'checks', '-o', 'json'], 1],
  ])(
    'khrun %j against an API server that does not answer: nothing on stdout, the error on stderr, exit %i',
    async (args, code) => {
      const r = await spawnCli(args, { KUBECONFIG: unreachable.path });
      expect(r.stdout).toBe('');
      expect(r.code, r.stderr).toBe(code);
      expect(r.stderr).toMatch(/127\.0\.0\.1|ECONNREFUSED|refused/);
    },
    SPAWN_MS,
  );

  it(
    'a batch that cannot reach the cluster: one YAML document per check, result failed; the logs on stderr',
    async () => {
      const r = await spawnCli(
        ['run', '--check', 'a', '--check', 'b', '-n', 'checks', '-o', 'yaml', '--report-host', '127.0.0.1'],
        { KUBECONFIG: unreachable.path },
      );
      expect(r.code, r.stderr).toBe(1);
      const docs = onlyYaml(r.stdout, ['check', 'result', 'error']);
      expect(docs).toEqual([
        expect.objectContaining({ check: 'checks/a', result: 'failed' }),
        expect.objectContaining({ check: 'checks/b', result: 'failed' }),
      ]);
      expect(r.stderr).toMatch(/"message":"batch finished"/);
    },
    SPAWN_MS,
  );

  it(
    'a run that cannot reach the cluster: its log lines are on stderr, as JSON lines',
    async () => {
      const r = await spawnCli(
        ['run', '--check', 'ping', '-n', 'checks', '-o', 'json', '--report-host', '127.0.0.1'],
        {
          KUBECONFIG: unreachable.path,
        },
      );
      const logs = r.stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: string; message: string });
      expect(logs.length, r.stderr).toBeGreaterThan(0);
      expect(
        logs.some((l) => l.level === 'ERROR' && l.message === 'runner failed'),
        r.stderr,
      ).toBe(true);
      expect(r.stderr).toMatch(/^khrun: run of checks\/ping failed: /m);
    },
    SPAWN_MS,
  );
});
