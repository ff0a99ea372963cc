import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HC_GROUP, HC_PLURAL, HC_VERSION } from '../../lib/healthcheck/resources.ts';
import { newKhState } from '../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { readState, repoRoot } from './helpers/khrun.ts';

// `khrun status --watch` as a person runs it: the real entrypoint as a child process, a khstate changed
// through the API server, the line awaited (with a timeout, no sleeps), then Ctrl-C (SIGINT) and exit 0.

const kc = adminKubeConfig();
const custom = kc.makeApiClient(CustomObjectsApi);
const LINE_TIMEOUT_MS = 60_000;
let ns: string;

/** A khstate as a recorded run leaves it (no khcheck: the status marks it, and nothing runs it). */
async function writeState(name: string, spec: Partial<KhState['spec']>) {
  const existing = await readState(kc, ns, name);
  const state = existing ?? newKhState(name, ns);
  state.spec = {
    ...state.spec,
    AuthoritativePod: 'khrun-watch-test',
    Node: 'khrun-node',
    RunDuration: '1.5s',
    LastRun: new Date().toISOString(),
    ...spec,
  };
  const co = { group: KH_GROUP, version: KH_VERSION, plural: KHSTATE_PLURAL, namespace: ns };
  if (existing) await custom.replaceNamespacedCustomObject({ ...co, name, body: state });
  else await custom.createNamespacedCustomObject({ ...co, body: state });
}

/** A v3 HealthCheck with its result written into its status (as v3's controller writes it), created or replaced. */
async function writeHealthCheck(name: string, status: Record<string, unknown>) {
  const co = { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL, namespace: ns };
  const body = { apiVersion: `${HC_GROUP}/${HC_VERSION}`, kind: 'HealthCheck', metadata: { name } };
  const existing = (await custom.getNamespacedCustomObject({ ...co, name }).catch(() => undefined)) as
    | { metadata: { resourceVersion: string } }
    | undefined;
  const current =
    existing ??
    ((await custom.createNamespacedCustomObject({
      ...co,
      body: { ...body, spec: { runInterval: '5m', timeout: '1m', podSpec: { spec: { containers: [] } } } },
    })) as { metadata: { resourceVersion: string } });
  await custom.replaceNamespacedCustomObjectStatus({
    ...co,
    name,
    body: { ...body, metadata: { name, resourceVersion: current.metadata.resourceVersion }, status },
  });
}

/** `khrun status ARGS` running; until() waits for a stdout line, interrupt() sends SIGINT and waits for the exit. */
function startKhrun(args: string[]) {
  const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), 'status', ...args], {
    env: { ...process.env, KUBECONFIG: inject('kubeconfigPath') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let seen = 0;
  let waiter: (() => void) | undefined;
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    waiter?.();
  });
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      exitCode = code;
      waiter?.();
      resolve(code);
    }),
  );
  return {
    lines,
    /** The first line from the last match on that passes test. */
    until(test: (line: string) => boolean, description: string): Promise<string> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiter = undefined;
          reject(
            new Error(
              `no line ${description} in ${LINE_TIMEOUT_MS} ms; stdout:\n${lines.join('\n')}\nstderr:\n${stderr}`,
            ),
          );
        }, LINE_TIMEOUT_MS);
        const look = () => {
          while (seen < lines.length) {
            const line = lines[seen++] ?? '';
            if (test(line)) {
              clearTimeout(timer);
              waiter = undefined;
              resolve(line);
              return;
            }
          }
          if (exitCode !== undefined) {
            clearTimeout(timer);
            waiter = undefined;
            reject(new Error(`khrun exited ${exitCode} before a line ${description}; stderr:\n${stderr}`));
          }
        };
        waiter = look;
        look();
      });
    },
    async interrupt(): Promise<{ code: number | null; stderr: string }> {
      child.kill('SIGINT');
      return { code: await exited, stderr };
    },
    kill: () => child.kill('SIGKILL'),
  };
}

beforeAll(async () => {
  ns = await freshNamespace(kc, 'status-watch');
  await writeState('steady', { OK: true, Errors: [] });
  await writeState('watched', { OK: true, Errors: [] });
});

afterAll(async () => {
  await dropNamespace(kc, ns);
});

describe('khrun status --watch', () => {
  it('prints the table, then a line per changed check, like kubectl get -w; Ctrl-C is exit 0', async () => {
    const watch = startKhrun(['--watch', '-n', ns]);
    try {
      await watch.until((l) => /^CHECK\s+NAMESPACE\s+OK\s+LAST RUN/.test(l), 'with the header');
      await watch.until(
        (l) => new RegExp(`^watched \\(no khcheck\\)\\s+${ns}\\s+true\\s`).test(l),
        'for watched',
      );
      const before = watch.lines.length;
      await writeState('watched', { OK: false, Errors: ['disk full on /data'] });
      const line = await watch.until((l) => l.startsWith('watched '), 'for the change of watched');
      expect(line).toMatch(
        new RegExp(
          `^watched \\(no khcheck\\)\\s+${ns}\\s+false\\s+\\d+s\\s+1\\.5s\\s+0\\s+disk full on /data$`,
        ),
      );
      // One line for the one check that changed: no header again, nothing for the steady one.
      expect(watch.lines.slice(before)).toEqual([line]);
      const { code, stderr } = await watch.interrupt();
      expect(code, stderr).toBe(0);
    } finally {
      watch.kill();
    }
  });

  it('-o json: one object per check, then one per change', async () => {
    const watch = startKhrun(['-w', '-n', ns, '-o', 'json']);
    try {
      const parsed = (l: string) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return undefined;
        }
      };
      const first = await watch.until((l) => parsed(l)?.name === 'watched', 'with watched, as JSON');
      expect(parsed(first)).toMatchObject({ type: 'ADDED', check: `${ns}/watched`, orphan: true });
      await writeState('watched', { OK: false, Errors: ['json change'], RunDuration: '2.5s' });
      const change = await watch.until((l) => parsed(l)?.type === 'MODIFIED', 'with the MODIFIED event');
      expect(parsed(change)).toMatchObject({
        type: 'MODIFIED',
        check: `${ns}/watched`,
        ok: false,
        error: 'json change',
        durationMs: 2_500,
        node: 'khrun-node',
      });
      expect(
        watch.lines.every((l) => parsed(l) !== undefined),
        'every line is JSON',
      ).toBe(true);
      const { code, stderr } = await watch.interrupt();
      expect(code, stderr).toBe(0);
    } finally {
      watch.kill();
    }
  });

  it('follows a v3 HealthCheck too: its status written, one event of kind HealthCheck', async () => {
    const lastRunUnix = Math.floor(Date.now() / 1000);
    await writeHealthCheck('watched', { ok: true, lastRunUnix, runDuration: 1e9, successCount: 1 });
    const watch = startKhrun(['-w', '-n', ns, '-o', 'json']);
    const parsed = (l: string) => JSON.parse(l) as Record<string, unknown>;
    try {
      const first = await watch.until((l) => parsed(l).kind === 'HealthCheck', 'with the HealthCheck');
      expect(parsed(first)).toMatchObject({ type: 'ADDED', check: `${ns}/watched`, ok: true, hasRun: true });
      await writeHealthCheck('watched', { ok: false, errors: ['v3 says no'], lastRunUnix, runDuration: 1e9 });
      const change = await watch.until((l) => parsed(l).type === 'MODIFIED', 'with the MODIFIED event');
      // The HealthCheck changed, not the khstate of the same name.
      expect(parsed(change)).toMatchObject({ kind: 'HealthCheck', ok: false, error: 'v3 says no' });
      const { code, stderr } = await watch.interrupt();
      expect(code, stderr).toBe(0);
    } finally {
      watch.kill();
    }
  });
});
