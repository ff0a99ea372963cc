import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { EXIT } from '../core/exit-codes.ts';
import { applyObjects, loadManifests } from '../kube/apply.ts';
import { waitForSet } from '../kube/list-watch.ts';
import { readConsecutiveFailures, readLastOutcome } from '../state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../state/resources.ts';
import { startLocalCluster } from './cluster.ts';

export interface DemoOptions {
  root: string;
  cacheDir: string;
  kubebuilderAssets?: string;
  signal: AbortSignal;
  write: (line: string) => void;
}

const NAMESPACE = 'kuberhealthy';

/**
 * `npm start`: the local cluster, the example khchecks of infra/examples, one iteration of each through the
 * real entrypoint (a `khrun run` process per check, at the same time), a table of the khstates, teardown.
 */
export async function demoCommand(opts: DemoOptions): Promise<number> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const cluster = await startLocalCluster({
    kubebuilderAssets: opts.kubebuilderAssets,
    cacheDir: opts.cacheDir,
    buildDir: join(opts.root, 'infra/build'),
    crdDir: join(opts.root, 'infra/crds'),
    onProgress: log,
    terminal: { isTTY: Boolean(process.stderr.isTTY), write: (text) => process.stderr.write(text) },
    signal: opts.signal,
  });
  try {
    const kc = cluster.kubeConfig;
    log(`local cluster up (Kubernetes ${cluster.kubernetesVersion}); applying infra/examples`);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
    await waitForSet({
      kc,
      path: `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`,
      fieldSelector: 'metadata.name=default',
      timeoutMs: 30_000,
      description: 'the default ServiceAccount of the example namespace',
      decide: (items) => (items.size > 0 ? true : undefined),
    });
    const dir = join(opts.root, 'infra/examples');
    // kustomization.yaml is kustomize's index of these files, not an object to apply.
    const files = (await readdir(dir))
      .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
      .sort();
    const objects = await loadManifests(files.map((f) => join(dir, f)));
    await applyObjects(kc, objects);
    const checks = objects.filter((o) => o.kind === 'KuberhealthyCheck').map((o) => o.metadata?.name ?? '');

    log(`running ${checks.length} checks: ${checks.join(', ')}`);
    const exits = await Promise.all(
      checks.map((check) =>
        runEntrypoint(opts.root, cluster.kubeconfigPath, cluster.hostIp, check, opts.signal),
      ),
    );

    const custom = kc.makeApiClient(CustomObjectsApi);
    const rows = [['CHECK', 'OK', 'OUTCOME', 'DURATION', 'EXIT', 'FAILURES', 'ERROR']];
    for (const [i, check] of checks.entries()) {
      const state = (await custom.getNamespacedCustomObject({
        group: KH_GROUP,
        version: KH_VERSION,
        namespace: NAMESPACE,
        plural: KHSTATE_PLURAL,
        name: check,
      })) as KhState;
      const outcome = readLastOutcome(state);
      rows.push([
        `${NAMESPACE}/${check}`,
        String(state.spec.OK),
        outcome?.kind ?? '-',
        state.spec.RunDuration,
        String(exits[i]),
        String(readConsecutiveFailures(state)),
        state.spec.Errors[0] ?? '',
      ]);
    }
    opts.write(formatTable(rows));
    return exits.every((code) => code === 0) ? EXIT.ok : EXIT.runnerError;
  } finally {
    log('tearing the local cluster down');
    await cluster.stop();
  }
}

function runEntrypoint(
  root: string,
  kubeconfig: string,
  reportHost: string,
  check: string,
  signal: AbortSignal,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join(root, 'functions/khrun.mjs'),
        'run',
        '--check',
        check,
        '--namespace',
        NAMESPACE,
        '--kubeconfig',
        kubeconfig,
      ],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'WARN', KHRUN_REPORT_HOST: reportHost },
        signal,
      },
    );
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

export function formatTable(rows: string[][]): string {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
