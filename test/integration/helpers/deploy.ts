import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { resolveKubectl } from '@khrun/devkit/local/binaries.ts';
import { KHRUN_IMAGE } from '@khrun/devkit/local/kubelet/khrun-image.ts';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { DEPLOY_NAMESPACE, DEPLOY_REPORT_KEY_SECRET } from '../../../infra/helm/render-deploy.ts';
import { reportKeyOf, signedReportUrl } from '../../../lib/report/report-token.ts';
import packageJson from '../../../package.json' with { type: 'json' };
import { repoRoot } from './khrun.ts';

const run = promisify(execFile);

/** khrun's namespace in infra/deploy. */
export { DEPLOY_NAMESPACE };

/** The image the kustomization and the chart run by default: the release repository at the package version. */
export const SHIPPED_IMAGE = `${KHRUN_IMAGE}:${packageJson.version}`;

function cacheDir(): string {
  return (
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun')
  );
}

/**
 * The bundles (as `npm run build` builds them) in .khrun/test-dist, the directory the global setup gives the
 * process kubelet as the khrun image's /app/dist. Built once per run by the global setup (setup/builds.ts),
 * before any file starts: a file that rebuilt them while another lane's pods run them would pull them away.
 */
export async function buildTestBundles(): Promise<string> {
  return inject('testDistDir');
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
 * them. The containers run the shipped image (SHIPPED_IMAGE; the process kubelet runs it as the local build
 * of the image's ENTRYPOINT: the global setup maps it to the bundles of buildTestBundles). Patches only
 * narrow it to the test: the tick CronJob is applied suspended unless the test runs it (`tick: 'scheduled'`,
 * or tickNamespaces: limited to those namespaces, with no first-run spreading), since a running tick that
 * is not limited dispatches every due khcheck and HealthCheck of the cluster each minute, those of the
 * files after it too; other CronJobs applied suspended on request. With the serve component, the report key Secret it mounts is created
 * first, as its kustomization.yaml tells a user to (a random key; one that exists already is kept, so
 * servers started by an earlier apply keep holding the Secret's key).
 */
export async function applyDeploy(opts: {
  name: string;
  /** Not used any more (the global setup maps the image to the test bundles); callers may drop it. */
  distDir?: string;
  components?: Array<'serve' | 'sync' | 'examples'>;
  /** The tick CronJob runs on its schedule, for every namespace (default: applied suspended). */
  tick?: 'scheduled' | 'suspended';
  /** The tick CronJob runs on its schedule for these namespaces only (comma-separated). */
  tickNamespaces?: string;
  /** CronJobs applied suspended (e.g. khrun-sync, which would otherwise manage every khcheck of the suite). */
  suspend?: string[];
  /** Another cluster than the suite's (a test's own second cluster); not with the serve component. */
  kubeconfig?: string;
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
  // The sync component removes the tick CronJob: nothing to suspend then.
  const tickRuns = opts.tick === 'scheduled' || opts.tickNamespaces !== undefined;
  const suspend = new Set(opts.suspend);
  if (!tickRuns && !opts.components?.includes('sync')) suspend.add('khrun-tick');
  if (tickRuns) suspend.delete('khrun-tick');
  if (opts.tickNamespaces || suspend.size) lines.push('patches:');
  if (opts.tickNamespaces) {
    // Only the test's checks, and each dispatched at the first tick (no first-run spreading).
    const env = (name: string, value: string) =>
      `{"op": "add", "path": "/spec/jobTemplate/spec/template/spec/containers/0/env/-", "value": {"name": "${name}", "value": "${value}"}}`;
    lines.push(
      '  - target: { kind: CronJob, name: khrun-tick }',
      `    patch: '[${env('KHRUN_NAMESPACES', opts.tickNamespaces)}, ${env('KHRUN_FIRST_RUN_JITTER', '0s')}]'`,
    );
  }
  for (const name of suspend) {
    lines.push(
      `  - target: { kind: CronJob, name: ${name} }`,
      `    patch: '[{"op": "add", "path": "/spec/suspend", "value": true}]'`,
    );
  }
  await writeFile(join(dir, 'kustomization.yaml'), `${lines.join('\n')}\n`);
  if (opts.components?.includes('serve')) await ensureReportKeySecret();
  return kubectl(['apply', '-k', dir], { kubeconfig: opts.kubeconfig });
}

/**
 * The Secret khrun-report-key of the serve component, made with the commands of
 * infra/deploy/components/serve/kustomization.yaml (the namespace first, unless it exists) when missing.
 */
async function ensureReportKeySecret(): Promise<void> {
  const exists = async (...what: string[]) =>
    (await kubectl(['get', ...what, '--ignore-not-found', '-o', 'name'])).trim() !== '';
  if (await exists('secret', DEPLOY_REPORT_KEY_SECRET, '-n', DEPLOY_NAMESPACE)) return;
  if (!(await exists('namespace', DEPLOY_NAMESPACE)))
    await kubectl(['create', 'namespace', DEPLOY_NAMESPACE]);
  // `openssl rand -hex 32`, as the kustomization says.
  const key = randomBytes(32).toString('hex');
  await kubectl([
    '-n',
    DEPLOY_NAMESPACE,
    'create',
    'secret',
    'generic',
    DEPLOY_REPORT_KEY_SECRET,
    `--from-literal=key=${key}`,
  ]);
}

/** A report endpoint's answer: HTTP status and body. */
export interface ReportAnswer {
  status: number;
  text: string;
}

/**
 * Three reports to a `khrun serve` at base (http://<pod IP>:8080) that show which report key it holds:
 * unsigned (refused at once by a server with a key), signed with another key (refused at once), and
 * signed with `key` for a check of `namespace` that has no khstate, which only a server holding `key`
 * lets through to its one khstate GET (then refused: no run is active).
 */
export async function reportKeyAnswers(
  base: string,
  key: string,
  namespace: string,
): Promise<{ unsigned: ReportAnswer; otherKey: ReportAnswer; ownKey: ReportAnswer }> {
  const path = `${base}/externalCheckStatus`;
  const run = { namespace, checkName: 'no-such-check', uuid: randomUUID(), deadlineMs: Date.now() + 600_000 };
  const post = async (url: string): Promise<ReportAnswer> => {
    const res = await fetch(url, {
      method: 'POST',
      body: '{"OK": true, "Errors": []}',
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, text: await res.text() };
  };
  return {
    unsigned: await post(path),
    otherKey: await post(signedReportUrl(path, reportKeyOf(randomBytes(32).toString('hex')), run)),
    ownKey: await post(signedReportUrl(path, reportKeyOf(key), run)),
  };
}

/** The report key (as a server reads it: trimmed) in the Secret name of namespace. */
export async function reportKeyOfSecret(admin: KubeConfig, namespace: string, name: string): Promise<string> {
  const secret = await admin.makeApiClient(CoreV1Api).readNamespacedSecret({ name, namespace });
  const data = secret.data?.key;
  if (!data) throw new Error(`Secret ${namespace}/${name} has no key "key"`);
  return Buffer.from(data, 'base64').toString('utf8').trim();
}

/** A server starts listening a moment after its pod turns Running: retried until its deadline. */
export async function waitForHttp(url: string, timeoutMs = 20_000): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 1_000)) {
    try {
      return await fetch(url, { signal: AbortSignal.timeout(2_000) });
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }
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
