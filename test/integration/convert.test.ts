import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { main } from '../../functions/cli/main.ts';
import { CHECK_KINDS } from '../../lib/convert/kinds.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from './helpers/cluster.ts';
import { repoRoot } from './helpers/khrun.ts';

// `khrun convert` against the real API server, through the real entrypoint: a live khcheck (Kuberhealthy
// v2.7.1's own pod-status-check) to a HealthCheck created through v3.0.0's CRD (infra/crds), read back and
// converted back; the server-side dry run catching a field the cluster's CRD prunes; and bad input.

const kc = adminKubeConfig();
const custom = kc.makeApiClient(CustomObjectsApi);
const khcheck = CHECK_KINDS.khcheck;
const hc = CHECK_KINDS.healthcheck;
type Resource = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown>;
  spec: Record<string, unknown>;
};

/**
 * `khrun convert ARGS` in this process, through the CLI's dispatcher (functions/cli/main.ts) with the
 * cluster's kubeconfig: the same parser, options and body as the binary, without a process start each.
 */
async function khrun(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    ['convert', ...args],
    {
      root: repoRoot,
      env: { KUBECONFIG: inject('kubeconfigPath') },
      write: (l) => out.push(l),
      warn: (l) => err.push(l),
    },
    () => Promise.reject(new Error('no developer command here')),
  );
  const text = (lines: string[]) => lines.map((l) => `${l}\n`).join('');
  return { code, stdout: text(out), stderr: text(err) };
}

/** The real entrypoint, spawned, with stdin: what `cat file | khrun convert -f -` does. */
function khrunProcess(
  args: string[],
  stdin: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), 'convert', ...args], {
      env: { ...process.env, KUBECONFIG: inject('kubeconfigPath') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** Kuberhealthy v2.7.1's own pod-status khcheck (cmd/pod-status-check), vendored unchanged. */
const upstream = (
  loadAll(
    readFileSync(
      join(repoRoot, 'test/fixtures/kuberhealthy/v2.7.1/cmd/pod-status-check/pod-status-check.yaml'),
      'utf8',
    ),
  ) as Resource[]
).find((d) => d?.kind === khcheck.kind) as Resource;

let ns: string;
beforeAll(async () => {
  ns = await freshNamespace(kc, 'kconv');
});
afterAll(async () => {
  await dropNamespace(kc, ns);
});

const get = (kind: typeof khcheck | typeof hc, name: string) =>
  custom.getNamespacedCustomObject({
    group: kind.group,
    version: kind.version,
    plural: kind.plural,
    namespace: ns,
    name,
  }) as Promise<Resource>;

describe('khrun convert on the local cluster', () => {
  it('a live khcheck becomes a HealthCheck the API server stores as converted, and converts back to the same spec', async () => {
    const name = 'pod-status';
    const source = {
      ...upstream,
      metadata: {
        name,
        namespace: ns,
        labels: { team: 'a' },
        annotations: { note: 'kept', 'khrun.dev/owner': 'khrun' },
      },
    };
    await custom.createNamespacedCustomObject({
      group: khcheck.group,
      version: khcheck.version,
      plural: khcheck.plural,
      namespace: ns,
      body: source,
    });
    const stored = await get(khcheck, name);

    const shown = await khrun([`khcheck/${name}`, '-n', ns, '-o', 'json']);
    expect(shown.stderr).toContain(
      `defaulted: KuberhealthyCheck ${ns}/${name} (cluster): spec.podSpec.restartPolicy: written as Never`,
    );
    expect(shown.stderr).not.toMatch(/^lost:/m);
    expect(shown.code).toBe(0);
    const converted = JSON.parse(shown.stdout) as Resource;
    expect(converted.metadata).toEqual({
      name,
      namespace: ns,
      labels: { team: 'a' },
      annotations: { note: 'kept' },
    });
    expect(converted.spec).toEqual({
      runInterval: '5m',
      timeout: '15m',
      podSpec: { spec: { ...(stored.spec.podSpec as object), restartPolicy: 'Never' } },
    });

    const applied = await khrun([`khcheck/${name}`, '-n', ns, '--apply', '-o', 'json']);
    expect(applied.stderr).toContain(`created: HealthCheck ${ns}/${name}`);
    expect(applied.code).toBe(0);
    const live = await get(hc, name);
    expect(live.spec).toEqual(converted.spec);
    expect((JSON.parse(applied.stdout) as Resource).metadata.uid).toBe(live.metadata.uid);

    const back = await khrun([`healthcheck/${name}`, '-n', ns, '-o', 'json']);
    expect(back.stderr).toBe('convert: converted 1\n');
    expect(back.code).toBe(0);
    const khcheckAgain = JSON.parse(back.stdout) as Resource;
    expect(khcheckAgain.kind).toBe(khcheck.kind);
    // The same spec as stored, with the restartPolicy v2 always used now written down.
    expect(khcheckAgain.spec).toEqual({
      ...stored.spec,
      podSpec: { ...(stored.spec.podSpec as object), restartPolicy: 'Never' },
    });

    // Again: the HealthCheck exists, and convert never replaces one.
    const again = await khrun([`khcheck/${name}`, '-n', ns, '--apply']);
    expect(again.stderr).toMatch(
      new RegExp(`refused: HealthCheck ${ns}/${name} \\(server-side dry run\\): 409: .*already exists`),
    );
    expect(again.code).toBe(1);
  });

  it('whole types are listed from the namespace: khchecks and khjobs, as a List with -o json', async () => {
    const job = CHECK_KINDS.khjob;
    await custom.createNamespacedCustomObject({
      group: job.group,
      version: job.version,
      plural: job.plural,
      namespace: ns,
      body: {
        apiVersion: `${job.group}/${job.version}`,
        kind: job.kind,
        metadata: { name: 'once' },
        spec: {
          timeout: '2m',
          podSpec: { containers: [{ name: 'main', image: 'node' }], restartPolicy: 'Never' },
        },
      },
    });
    const result = await khrun(['khjobs', '-n', ns, '-o', 'json']);
    expect(result.stderr).toContain(
      `note: KuberhealthyJob ${ns}/once (cluster): kind: written as singleRunOnly: true`,
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      kind: hc.kind,
      metadata: { name: 'once', namespace: ns },
      spec: { singleRunOnly: true, timeout: '2m' },
    });
    // pod-status is the khcheck the first test made (tests in this file run in order).
    const both = JSON.parse((await khrun(['khchecks', 'khjobs', '-n', ns, '-o', 'json'])).stdout) as {
      kind: string;
      items: Resource[];
    };
    expect(both.kind).toBe('List');
    expect(both.items.map((i) => `${i.kind}/${i.metadata.name}`).sort()).toEqual([
      'HealthCheck/once',
      'HealthCheck/pod-status',
    ]);
  });

  it('--apply stops at the server-side dry run when the cluster’s CRD would prune a field, and creates nothing', async () => {
    const typo = {
      apiVersion: `${hc.group}/${hc.version}`,
      kind: hc.kind,
      metadata: { name: 'typo', namespace: ns },
      spec: {
        runInterval: '1m',
        timeout: '30s',
        podSpec: {
          spec: {
            containers: [{ name: 'main', image: 'node', imagePullPolicyy: 'Never' }],
            restartPolicy: 'Never',
          },
        },
      },
    };
    const dir = await mkdtemp(join(tmpdir(), 'khrun-convert-'));
    const file = join(dir, 'typo.json');
    await writeFile(file, JSON.stringify(typo));
    const result = await khrun(['-f', file, '--apply']).finally(() =>
      rm(dir, { recursive: true, force: true }),
    );
    expect(result.stderr).toContain(
      `lost: KuberhealthyCheck ${ns}/typo (server-side dry run): spec.podSpec.containers[0].imagePullPolicyy: the cluster's CRD prunes it`,
    );
    expect(result.code).toBe(3);
    await expect(get(khcheck, 'typo')).rejects.toMatchObject({ code: 404 });
  });

  it.each([
    ['not YAML', ['-f', '-'], 'kind: [', /<stdin> is not YAML or JSON: .*\(line 1, column 8\); fix the file/],
    [
      'a kind convert does not read',
      ['deployment/x'],
      undefined,
      /"deployment\/x": is not a resource convert reads/,
    ],
    [
      'a missing resource',
      ['khcheck/nope', '-n', '@NS'],
      undefined,
      /khcheck @NS\/nope not found; list them with kubectl get khchecks\.comcast\.github\.io -n @NS/,
    ],
    [
      'no check at all',
      ['-f', '-'],
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n',
      /no KuberhealthyCheck, KuberhealthyJob, HealthCheck in the input/,
    ],
  ])(
    'bad input (%s): exit 2, a message naming the problem and what to do, nothing on stdout',
    async (_what, args, stdin, message) => {
      const withNs = args.map((a) => a.replace('@NS', ns));
      // Input on stdin goes through the real process; the rest through the dispatcher.
      const result = stdin === undefined ? await khrun(withNs) : await khrunProcess(withNs, stdin);
      expect(result.stderr).toMatch(new RegExp(message.source.replaceAll('@NS', ns)));
      expect(result.stdout).toBe('');
      expect(result.code).toBe(2);
    },
  );
});
