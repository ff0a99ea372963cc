import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readLastOutcome } from '../../lib/state/khstate.ts';
import { ensureChromium } from './helpers/chromium.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from './helpers/cluster.ts';
import { applyDeploy, buildTestBundles, DEPLOY_NAMESPACE, waitForHttp } from './helpers/deploy.ts';
import { createCheck, nodeContainer, npmClientEnv, outcomeOf, readState, runKhrun } from './helpers/khrun.ts';
import { asPerson, person } from './helpers/person.ts';

// The last run's log where people look, on the local cluster: `khrun logs` (as a person with the
// khrun-rerun ClusterRole only), `khrun describe`, and the status server of infra/deploy's serve component
// (its own ServiceAccount and RBAC: pods/log get and nothing else of pods) at GET /api/logs and on its page.

const admin = adminKubeConfig();
let ns: string;
let alice: Awaited<ReturnType<typeof person>>;
const runs: string[] = [];

/** 25 numbered lines, one with markup and a terminal escape, a last line; each names its run; then a failure. */
const CHATTY = `const u = process.env.KH_RUN_UUID;
for (let i = 1; i <= 25; i++) console.log('line ' + i + ' of run ' + u);
console.log('<b>bold</b> & \\u001b[31mred');
console.log('last line of run ' + u);
require('kuberhealthy').ReportFailure(['chatty failed']);`;

beforeAll(async () => {
  await buildTestBundles();
  await applyDeploy({ name: 'logs', components: ['serve'], suspend: ['khrun-tick'] });
  ns = await freshNamespace(admin, 'logs');
  alice = await person(admin, { namespace: ns, name: 'alice' });
  await createCheck(admin, ns, 'chatty', { containers: [nodeContainer(CHATTY, { env: npmClientEnv })] });
  await createCheck(admin, ns, 'idle', { containers: [nodeContainer('0')] });
  // Two runs, here (the helper's report host), so the last run and the one before have pods.
  for (let i = 0; i < 2; i++) {
    const result = await runKhrun(['--check', 'chatty', '--namespace', ns, '--output', 'json']);
    expect(outcomeOf(result)).toMatchObject({ result: 'recorded', kind: 'Failed' });
    runs.push(readLastOutcome(await readState(admin, ns, 'chatty'))?.uuid ?? '');
  }
}, 240_000);

afterAll(async () => {
  await alice?.cleanup();
  await dropNamespace(admin, ns);
});

describe('khrun logs', () => {
  it("prints the last run's checker log, as it is when piped, and which pod on stderr", async () => {
    const result = await asPerson(alice.kubeconfig, ['logs', 'chatty', '-n', ns]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(27);
    expect(lines[0]).toBe(`line 1 of run ${runs[1]}`);
    expect(lines[25]).toBe('<b>bold</b> & \u001b[31mred');
    expect(lines[26]).toBe(`last line of run ${runs[1]}`);
    expect(result.stderr).toMatch(
      /^pod chatty-\d+(-[0-9a-f]{8})? \((Succeeded|Running), created \S+ ago\), container check\n$/,
    );
  });

  it('--previous: the run before; --tail N: its last lines', async () => {
    const previous = await asPerson(alice.kubeconfig, [
      'logs',
      'chatty',
      '-n',
      ns,
      '--previous',
      '--tail',
      '2',
    ]);
    expect(previous.code, previous.stderr).toBe(0);
    expect(previous.stdout).toBe(`<b>bold</b> & \u001b[31mred\nlast line of run ${runs[0]}\n`);
  });

  it('says when no pod is kept (exit 1) and when there is no such check (exit 2)', async () => {
    const idle = await asPerson(alice.kubeconfig, ['logs', 'idle', '-n', ns]);
    expect(idle.code).toBe(1);
    expect(idle.stderr).toContain(`no checker pod of khcheck ${ns}/idle is kept`);
    const missing = await asPerson(alice.kubeconfig, ['logs', 'nope', '-n', ns]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`no khcheck or HealthCheck named nope in namespace ${ns}`);
    expect(missing.stdout).toBe('');
  });
});

describe('khrun describe', () => {
  it("shows the described run's log tail, bounded and escaped", async () => {
    const result = await runKhrunCommand(['describe', 'chatty', '-n', ns]);
    expect(result.code, result.stderr).toBe(0);
    const section = result.stdout.slice(result.stdout.indexOf('Log:'));
    expect(section).toMatch(
      /^Log: {11}pod chatty-\d+(-[0-9a-f]{8})?, container check \(last 20 lines; khrun logs prints the whole log\)\n/,
    );
    expect(section).toContain(`  line 8 of run ${runs[1]}\n`);
    expect(section).not.toContain('line 7 of run');
    expect(section).toContain('  <b>bold</b> & \\x1b[31mred\n');
    expect(section).toContain(`  last line of run ${runs[1]}\n`);
    expect(result.stdout).not.toContain('\u001b[31mred');
  });
});

describe('the status server: GET /api/logs and the page', () => {
  let base: string;
  beforeAll(async () => {
    const pods = await waitFor<V1Pod, V1Pod[]>(admin, {
      path: `/api/v1/namespaces/${DEPLOY_NAMESPACE}/pods`,
      labelSelector: 'app.kubernetes.io/component=server',
      decide: (items) => {
        const running = [...items.values()].filter((p) => p.status?.phase === 'Running' && p.status.podIP);
        return running.length > 0 ? running : undefined;
      },
      timeoutMs: 90_000,
      description: 'a running khrun serve pod',
    });
    base = `http://${pods[0]?.status?.podIP}:8080`;
    await waitForHttp(`${base}/healthz`, 30_000);
  }, 120_000);

  /** The server's answer once its khstate cache has the check's last run (a watch behind the API server). */
  async function logsOf(query: string): Promise<Response> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const res = await fetch(`${base}/api/logs?${query}`);
      if (res.status !== 404 || Date.now() > deadline) return res;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  it("answers the last run's tail as JSON: 20 lines, the pod named from the state, markup escaped", async () => {
    const res = await logsOf(`namespace=${ns}&khcheck=chatty`);
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).not.toContain('<b>');
    const body = JSON.parse(text) as { pod: string; lines: string[]; truncated: boolean };
    // Two runs may start in one second: the second's pod then carries its run UUID's first 8 characters.
    expect(body.pod).toMatch(/^chatty-\d+(-[0-9a-f]{8})?$/);
    expect(body.lines).toHaveLength(20);
    expect(body.lines[0]).toBe(`line 8 of run ${runs[1]}`);
    expect(body.lines.at(-2)).toBe('<b>bold</b> & \u001b[31mred');
    expect(body.lines.at(-1)).toBe(`last line of run ${runs[1]}`);
    expect(body.truncated).toBe(true);

    const v3Style = await fetch(
      `${base}/api/logs?namespace=${ns}&khcheck=chatty&pod=${body.pod}&format=text`,
    );
    expect(v3Style.status).toBe(200);
    expect(v3Style.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect((await v3Style.text()).trimEnd().split('\n').at(-1)).toBe(`last line of run ${runs[1]}`);
    // Any other pod is refused, the server's own included: it reads no log but the check's last run's.
    const other = await fetch(
      `${base}/api/logs?namespace=${DEPLOY_NAMESPACE}&khcheck=chatty&pod=kuberhealthy-x`,
    );
    expect(other.status).toBe(404);
    const notOfRun = await fetch(`${base}/api/logs?namespace=${ns}&khcheck=chatty&pod=chatty-1`);
    expect(notOfRun.status).toBe(403);
  });

  it("shows a failing check's log tail on the page as text", { timeout: 900_000 }, async () => {
    await logsOf(`namespace=${ns}&khcheck=chatty`);
    const chromiumPath = await ensureChromium();
    const profile = await mkdtemp(join(tmpdir(), 'khrun-chromium-'));
    try {
      const { stdout: dom } = await promisify(execFile)(
        chromiumPath,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
          `--user-data-dir=${profile}`,
          '--virtual-time-budget=5000',
          '--dump-dom',
          `${base}/status?namespace=${ns}`,
        ],
        { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
      );
      const card = dom.slice(dom.indexOf(`data-check="${ns}/chatty"`));
      expect(card).toMatch(
        /<details class="log" open="">\s*<summary>last run's log \(pod chatty-\d+(-[0-9a-f]{8})?\)<\/summary>/,
      );
      expect(card).toContain(`last line of run ${runs[1]}`);
      expect(card).toContain('&lt;b&gt;bold&lt;/b&gt; &amp; \u001b[31mred');
      expect(dom).not.toContain('<b>bold</b>');
    } finally {
      await rm(profile, { recursive: true, force: true });
    }
  });
});

/** A khrun command as the admin, with the cluster's kubeconfig. */
function runKhrunCommand(args: string[]) {
  return asPerson(inject('kubeconfigPath'), args);
}
