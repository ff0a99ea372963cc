// One source for khrun's manifests: the chart's templates (infra/helm/khrun/templates). The resource files
// of the kustomization (infra/deploy) are their `helm template` rendering with the values that select each
// file's part, and the chart's crds/ are copies of infra/crds (Kuberhealthy's CRDs, also used by the local
// cluster). Edit the chart, then write the kustomization's files again:
//
//   npx tsx infra/helm/render-deploy.ts           # writes them (builds helm on first use, cached)
//   npx tsx infra/helm/render-deploy.ts --check   # exit 1 when a committed file differs
//
// test/integration/helm.test.ts fails when they differ, and renders the kustomization (kubectl kustomize)
// and the chart (helm template) for every component combination to compare them object by object.

import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const CHART_DIR = 'infra/helm/khrun';

/** The namespace the kustomization installs into, and the release name its rendering uses. */
export const DEPLOY_NAMESPACE = 'khrun';

/** The Secret (key `key`) holding the report key of the kustomization's serve component. */
export const DEPLOY_REPORT_KEY_SECRET = 'khrun-report-key';

/** The Prometheus Operator's API, which `helm template` (no cluster) is told exists for the monitoring files. */
export const MONITORING_API = 'monitoring.coreos.com/v1';

/** The values of the kustomization's monitoring component (infra/deploy/components/monitoring). */
export const DEPLOY_MONITORING_SET = [
  'monitoring.serviceMonitor.enabled=true',
  'monitoring.rules.enabled=true',
  'monitoring.dashboard.enabled=true',
];

export interface DeployRender {
  template: string;
  target: string;
  set: string[];
  /** APIs `helm template` is told the cluster serves (--api-versions). */
  apiVersions?: string[];
  /** Only the objects of these kinds (a component's patch); default all. */
  kinds?: string[];
}

/** Each rendered file of the kustomization: the template and the values that select it. */
export const DEPLOY_RENDERS: ReadonlyArray<DeployRender> = [
  { template: 'namespace.yaml', target: 'infra/deploy/namespace.yaml', set: ['createNamespace=true'] },
  { template: 'runner.yaml', target: 'infra/deploy/runner.yaml', set: [] },
  { template: 'tick.yaml', target: 'infra/deploy/tick.yaml', set: ['mode=tick'] },
  { template: 'admission.yaml', target: 'infra/deploy/admission.yaml', set: [] },
  // The server, status and metrics only: kustomize cannot make a random report key.
  { template: 'serve.yaml', target: 'infra/deploy/serve.yaml', set: ['server.reports=false'] },
  // The serve component turns its reports on: its Deployment, as a strategic-merge patch over the base's,
  // mounts the Secret khrun-report-key that the user creates first (its kustomization.yaml says how).
  {
    template: 'serve.yaml',
    target: 'infra/deploy/components/serve/serve.yaml',
    set: [`server.reportKey.existingSecret=${DEPLOY_REPORT_KEY_SECRET}`],
    kinds: ['Deployment'],
  },
  { template: 'sync.yaml', target: 'infra/deploy/components/sync/sync.yaml', set: ['mode=sync'] },
  ...['servicemonitor.yaml', 'prometheusrule.yaml', 'dashboard.yaml'].map((template) => ({
    template,
    target: `infra/deploy/components/monitoring/${template}`,
    set: DEPLOY_MONITORING_SET,
    apiVersions: [MONITORING_API],
  })),
  // Its own step, beside infra/deploy rather than in it: it must outlive `kubectl delete -k infra/deploy`
  // (the chart keeps it across `helm uninstall`), kubernetes/kubernetes#130887.
  { template: 'parameter-keeper.yaml', target: 'infra/parameter-keeper/keeper.yaml', set: [] },
];

/** The CRDs: infra/crds is their home; the chart ships copies (Helm installs crds/ before templates). */
export const CRD_COPIES: ReadonlyArray<{ source: string; target: string }> = [
  'healthchecks.yaml',
  'khchecks.yaml',
  'khjobs.yaml',
  'khstates.yaml',
].map((file) => ({ source: `infra/crds/${file}`, target: `${CHART_DIR}/crds/${file}` }));

/** `helm template` of the chart (the release khrun in DEPLOY_NAMESPACE unless given), its stdout. */
export async function helmTemplate(
  helm: string,
  root: string,
  args: {
    set?: string[];
    showOnly?: string;
    namespace?: string;
    values?: string[];
    apiVersions?: string[];
  } = {},
): Promise<string> {
  const argv = [
    'template',
    'khrun',
    join(root, CHART_DIR),
    '--namespace',
    args.namespace ?? DEPLOY_NAMESPACE,
  ];
  for (const s of args.set ?? []) argv.push('--set', s);
  for (const f of args.values ?? []) argv.push('--values', f);
  for (const api of args.apiVersions ?? []) argv.push('--api-versions', api);
  if (args.showOnly) argv.push('--show-only', `templates/${args.showOnly}`);
  try {
    const { stdout } = await run(helm, argv, { maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`helm ${argv.join(' ')} failed: ${e.stderr || e.message}`);
  }
}

/**
 * One template's rendering as a kustomization file: Helm's `# Source:` lines replaced by one header that
 * says where the file comes from and how to write it again. Pure.
 */
export function asDeployFile(
  rendered: string,
  render: { template: string; set: string[]; kinds?: string[]; apiVersions?: string[] },
): string {
  const docs = rendered
    .split(/^---\s*$/m)
    .map((doc) =>
      doc
        .split('\n')
        .filter((line) => !line.startsWith('# Source: '))
        .join('\n')
        .trim(),
    )
    .filter((doc) => doc.length > 0)
    .filter((doc) => !render.kinds || render.kinds.includes(/^kind: (\S+)$/m.exec(doc)?.[1] ?? ''));
  const settings = [...render.set, ...(render.apiVersions ?? []).map((api) => `--api-versions ${api}`)];
  const only = render.kinds ? ` (its ${render.kinds.join(', ')} only)` : '';
  const values = (settings.length ? ` with ${settings.join(', ')}` : '') + only;
  const header =
    `# Generated from ${CHART_DIR}/templates/${render.template}${values}: edit the template, then\n` +
    '# run `npx tsx infra/helm/render-deploy.ts`.\n';
  return `${header}${docs.join('\n---\n')}\n`;
}

/** Every generated file with the content it must have. */
export async function renderedFiles(
  helm: string,
  root: string,
): Promise<Array<{ path: string; text: string }>> {
  const files: Array<{ path: string; text: string }> = [];
  for (const r of DEPLOY_RENDERS) {
    const rendered = await helmTemplate(helm, root, {
      set: r.set,
      showOnly: r.template,
      apiVersions: r.apiVersions,
    });
    files.push({ path: r.target, text: asDeployFile(rendered, r) });
  }
  for (const c of CRD_COPIES)
    files.push({ path: c.target, text: await readFile(join(root, c.source), 'utf8') });
  return files;
}

/** The generated files whose committed content differs from what they must be. */
export async function staleFiles(helm: string, root: string): Promise<string[]> {
  const stale: string[] = [];
  for (const file of await renderedFiles(helm, root)) {
    const current = await readFile(join(root, file.path), 'utf8').catch(() => undefined);
    if (current !== file.text) stale.push(file.path);
  }
  return stale;
}

async function main(argv: string[]): Promise<number> {
  const { resolveHelm } = await import('@khrun/devkit/local/binaries.ts');
  const root = resolve(import.meta.dirname, '../..');
  const cacheDir =
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');
  const helm = await resolveHelm({
    cacheDir,
    buildDir: join(root, 'infra/build'),
    onProgress: (line) => process.stderr.write(`${line}\n`),
  });
  if (argv.includes('--check')) {
    const stale = await staleFiles(helm, root);
    for (const path of stale) process.stderr.write(`${path} differs from its rendering\n`);
    if (stale.length) process.stderr.write('run: npx tsx infra/helm/render-deploy.ts\n');
    return stale.length ? 1 : 0;
  }
  for (const file of await renderedFiles(helm, root)) {
    const current = await readFile(join(root, file.path), 'utf8').catch(() => undefined);
    if (current === file.text) continue;
    await writeFile(join(root, file.path), file.text);
    process.stdout.write(`wrote ${file.path}\n`);
  }
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
