import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { buildBundles } from '@khrun/devkit/build/bundle.ts';
import { resolveKubectl } from '@khrun/devkit/local/binaries.ts';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { repoRoot } from './khrun.ts';

const run = promisify(execFile);
export const DEPLOY_NAMESPACE = 'kuberhealthy';

function cacheDir(): string {
  return (
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun')
  );
}

/**
 * Builds the bundles (as `npm run build` does) into .khrun/test-dist, once per test file: the directory
 * the global setup gives the process kubelet as the khrun image's /app/dist.
 */
export async function buildTestBundles(): Promise<string> {
  const outdir = join(repoRoot, '.khrun/test-dist');
  await mkdir(outdir, { recursive: true });
  await buildBundles({ root: repoRoot, outdir });
  return outdir;
}

export function kubectlPath(): Promise<string> {
  return resolveKubectl({ cacheDir: cacheDir(), buildDir: join(repoRoot, 'infra/build') });
}

let kubeconfigOutsideVitest: string | undefined;

/** The cluster kubectl talks to when these helpers run outside vitest (the benchmark): its own cluster's. */
export function useKubeconfigOutsideVitest(path: string): void {
  kubeconfigOutsideVitest = path;
}

export async function kubectl(args: string[], opts: { kubeconfig?: string } = {}): Promise<string> {
  const bin = await kubectlPath();
  try {
    const { stdout } = await run(
      bin,
      [`--kubeconfig=${opts.kubeconfig ?? kubeconfigOutsideVitest ?? inject('kubeconfigPath')}`, ...args],
      {
        maxBuffer: 32 * 1024 * 1024,
      },
    );
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')} failed: ${e.stderr || e.message}`);
  }
}

/**
 * `kubectl apply -k` of infra/deploy with the given components, as a user's kustomization would include
 * them. The containers run the shipped image `khrun` (the process kubelet runs it as the local build of
 * the image's ENTRYPOINT: the global setup maps it to the bundles of buildTestBundles). Optional patches
 * only narrow it to the test: the tick limited to some namespaces with no first-run spreading, and
 * CronJobs applied suspended.
 */
export async function applyDeploy(opts: {
  name: string;
  /** Not used any more (the global setup maps the image to the test bundles); callers may drop it. */
  distDir?: string;
  components?: Array<'serve' | 'sync' | 'examples'>;
  tickNamespaces?: string;
  /** CronJobs applied suspended (e.g. khrun-sync, which would otherwise manage every khcheck of the suite). */
  suspend?: string[];
}): Promise<string> {
  const dir = join(repoRoot, '.khrun/test-overlays', opts.name);
  await mkdir(dir, { recursive: true });
  const rel = (p: string) => relative(dir, join(repoRoot, p));
  const lines = [
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    'resources:',
    `  - ${rel('infra/deploy')}`,
    ...(opts.components?.length
      ? ['components:', ...opts.components.map((c) => `  - ${rel(`infra/deploy/components/${c}`)}`)]
      : []),
  ];
  if (opts.tickNamespaces || opts.suspend?.length) lines.push('patches:');
  if (opts.tickNamespaces) {
    // Only the test's checks, and each dispatched at the first tick (no first-run spreading).
    const env = (name: string, value: string) =>
      `{"op": "add", "path": "/spec/jobTemplate/spec/template/spec/containers/0/env/-", "value": {"name": "${name}", "value": "${value}"}}`;
    lines.push(
      '  - target: { kind: CronJob, name: khrun-tick }',
      `    patch: '[${env('KHRUN_NAMESPACES', opts.tickNamespaces)}, ${env('KHRUN_FIRST_RUN_JITTER', '0s')}]'`,
    );
  }
  for (const name of opts.suspend ?? []) {
    lines.push(
      `  - target: { kind: CronJob, name: ${name} }`,
      `    patch: '[{"op": "add", "path": "/spec/suspend", "value": true}]'`,
    );
  }
  await writeFile(join(dir, 'kustomization.yaml'), `${lines.join('\n')}\n`);
  return kubectl(['apply', '-k', dir]);
}

/** A KubeConfig that authenticates as a ServiceAccount, with a token from the TokenRequest API. */
export async function serviceAccountKubeConfig(
  admin: KubeConfig,
  namespace: string,
  name: string,
): Promise<KubeConfig> {
  const core = admin.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`no token for ${namespace}/${name}`);
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      { name: 'local', server: cluster.server, caData: cluster.caData, skipTLSVerify: cluster.skipTLSVerify },
    ],
    users: [{ name, token }],
    contexts: [{ name: 'sa', cluster: 'local', user: name, namespace }],
    currentContext: 'sa',
  });
  return kc;
}

/** Writes a kubeconfig file for a KubeConfig (for processes and kubectl). */
export async function writeKubeConfig(kc: KubeConfig, name: string): Promise<string> {
  const dir = join(repoRoot, '.khrun/test-kubeconfigs');
  await mkdir(dir, { recursive: true });
  const path = join(dir, name);
  await writeFile(path, kc.exportConfig(), { mode: 0o600 });
  return path;
}
