import { execFile } from 'node:child_process';
import {
  access,
  chmod,
  constants,
  cp,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { goBuild, goVersion, type Terminal } from './go-build.ts';

/** Paths of the control-plane binaries; the controller manager and scheduler may be absent (see notices). */
export interface ClusterBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager?: string;
  kubeScheduler?: string;
  kubernetesVersion: string;
  etcdVersion: string;
  /** Human-readable notes on where each binary came from and what is missing. */
  notices: string[];
}

export interface BinaryOptions {
  /** envtest's convention: a directory holding etcd and kube-apiserver. */
  kubebuilderAssets?: string;
  /** The user's cache directory for khrun (e.g. ~/.cache/khrun). */
  cacheDir: string;
  /** infra/build: the committed wrapper Go modules. */
  buildDir: string;
  onProgress?: (line: string) => void;
  /** A person's terminal: builds draw a progress bar there instead of a line per 100 packages. */
  terminal?: Terminal;
  signal?: AbortSignal;
}

const KUBE_COMMANDS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;

/** Reads the pinned versions from the committed go.mod files, so the cache key follows the pin. */
export async function pinnedVersions(buildDir: string): Promise<{ kubernetes: string; etcd: string }> {
  const kube = await readFile(join(buildDir, 'kubernetes', 'go.mod'), 'utf8');
  const etcd = await readFile(join(buildDir, 'etcd', 'go.mod'), 'utf8');
  const k = /^(?:require\s+|\s+)k8s\.io\/kubernetes (v\S+)/m.exec(kube)?.[1];
  const e = /^(?:require\s+|\s+)go\.etcd\.io\/etcd\/server\/v3 (v\S+)/m.exec(etcd)?.[1];
  if (!k || !e) throw new Error(`could not read the pinned versions from ${buildDir}/*/go.mod`);
  return { kubernetes: k, etcd: e };
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds the binaries: $KUBEBUILDER_ASSETS first, then the cache, else builds them from the Go module
 * proxy through the wrapper modules in infra/build (minutes the first time; seconds with a warm Go cache).
 */
export async function resolveBinaries(opts: BinaryOptions): Promise<ClusterBinaries> {
  const versions = await pinnedVersions(opts.buildDir);
  const kubeDir = join(opts.cacheDir, 'bin', `kubernetes-${versions.kubernetes}`);
  const etcdDir = join(opts.cacheDir, 'bin', `etcd-${versions.etcd}`);
  const notices: string[] = [];
  const progress = opts.onProgress ?? (() => {});

  const ensure = async (dir: string, command: string, module: string, pkg: string, ldflags: string) => {
    const target = join(dir, command);
    if (await isExecutable(target)) return target;
    if (!(await goVersion())) {
      throw new Error(
        `${command} is not in ${dir} and Go is not installed to build it. Install Go 1.26 or newer ` +
          '(the go command on PATH), or set KUBEBUILDER_ASSETS to a directory holding etcd and kube-apiserver.',
      );
    }
    await mkdir(dir, { recursive: true });
    const partial = `${target}.partial-${process.pid}`;
    progress(`building ${command} from the Go module proxy (first time only; takes minutes on 2 cores)`);
    try {
      await goBuild({
        moduleDir: join(opts.buildDir, module),
        pkg,
        output: partial,
        ldflags,
        onProgress: progress,
        terminal: opts.terminal,
        signal: opts.signal,
      });
      await rename(partial, target);
    } finally {
      await rm(partial, { force: true });
    }
    return target;
  };

  const kubeLd = kubeVersionLdflags(versions.kubernetes);
  let etcd: string;
  let kubeApiserver: string;
  if (opts.kubebuilderAssets) {
    etcd = join(opts.kubebuilderAssets, 'etcd');
    kubeApiserver = join(opts.kubebuilderAssets, 'kube-apiserver');
    for (const p of [etcd, kubeApiserver]) {
      if (!(await isExecutable(p)))
        throw new Error(`KUBEBUILDER_ASSETS is set, but ${p} is not an executable file`);
    }
    notices.push(`etcd and kube-apiserver from KUBEBUILDER_ASSETS (${opts.kubebuilderAssets})`);
  } else {
    etcd = await ensure(etcdDir, 'etcd', 'etcd', 'go.etcd.io/etcd/server/v3', '-s -w');
    kubeApiserver = await ensure(
      kubeDir,
      'kube-apiserver',
      'kubernetes',
      'k8s.io/kubernetes/cmd/kube-apiserver',
      kubeLd,
    );
  }
  const extras: Partial<Record<(typeof KUBE_COMMANDS)[number], string>> = {};
  for (const command of KUBE_COMMANDS.slice(1)) {
    const cached = join(kubeDir, command);
    if (await isExecutable(cached)) {
      extras[command] = cached;
    } else if (await goVersion()) {
      extras[command] = await ensure(
        kubeDir,
        command,
        'kubernetes',
        `k8s.io/kubernetes/cmd/${command}`,
        kubeLd,
      );
    } else {
      notices.push(
        `${command} skipped: not cached and Go is not installed; namespaces get no default ServiceAccount, ` +
          'and Jobs, CronJobs and garbage collection do not run (install Go 1.26+ to build it)',
      );
    }
  }
  return {
    etcd,
    kubeApiserver,
    kubeControllerManager: extras['kube-controller-manager'],
    kubeScheduler: extras['kube-scheduler'],
    kubernetesVersion: versions.kubernetes,
    etcdVersion: versions.etcd,
    notices,
  };
}

/** The version stamps upstream's hack/lib/golang.sh sets, so /version reports the real version. */
function kubeVersionLdflags(version: string): string {
  const minor = version.split('.')[1] ?? '';
  const flags = ['-s', '-w'];
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    flags.push(`-X ${pkg}.gitVersion=${version}`, `-X ${pkg}.gitMajor=1`, `-X ${pkg}.gitMinor=${minor}`);
    flags.push(`-X ${pkg}.gitTreeState=clean`);
  }
  return flags.join(' ');
}

/**
 * A kubectl of the pinned Kubernetes version (for `kubectl apply -k` and `kubectl create job --from` in
 * tests), from the same cache, built from the wrapper module the first time.
 */
export async function resolveKubectl(opts: Omit<BinaryOptions, 'kubebuilderAssets'>): Promise<string> {
  const versions = await pinnedVersions(opts.buildDir);
  return cachedBuild(opts, {
    dir: join(opts.cacheDir, 'bin', `kubernetes-${versions.kubernetes}`),
    command: 'kubectl',
    module: 'kubernetes',
    pkg: 'k8s.io/kubernetes/cmd/kubectl',
    ldflags: kubeVersionLdflags(versions.kubernetes),
  });
}

/** The helm version pinned by infra/build/helm/go.mod, and the client-go version it builds with. */
export async function pinnedHelmVersion(buildDir: string): Promise<{ helm: string; clientGo: string }> {
  const mod = await readFile(join(buildDir, 'helm', 'go.mod'), 'utf8');
  const helm = /^(?:require\s+|\s+)helm\.sh\/helm\/v3 (v\S+)/m.exec(mod)?.[1];
  const clientGo = /^(?:require\s+|\s+)k8s\.io\/client-go (v\S+)/m.exec(mod)?.[1];
  if (!helm || !clientGo)
    throw new Error(`could not read the pinned helm version from ${buildDir}/helm/go.mod`);
  return { helm, clientGo };
}

/**
 * A helm of the pinned version (for linting, rendering and installing infra/helm/khrun in tests), cached
 * in `<cacheDir>/bin/helm-<version>/helm`, built from the wrapper module infra/build/helm the first time.
 */
export async function resolveHelm(opts: Omit<BinaryOptions, 'kubebuilderAssets'>): Promise<string> {
  const { helm: version, clientGo } = await pinnedHelmVersion(opts.buildDir);
  // Upstream's Makefile stamps these: `helm version` reports the real version, and `helm template` and
  // `helm lint` assume the Kubernetes version of the client-go they are built with (v0.37.x → 1.37), not
  // the fallback 1.20, which a chart's kubeVersion constraint would reject.
  const minor = clientGo.split('.')[1] ?? '';
  const ldflags = ['-s', '-w'];
  const stamp = 'helm.sh/helm/v3/internal/version';
  ldflags.push(`-X ${stamp}.version=${version}`, `-X ${stamp}.metadata=`, `-X ${stamp}.gitTreeState=clean`);
  for (const pkg of ['helm.sh/helm/v3/pkg/lint/rules', 'helm.sh/helm/v3/pkg/chartutil'])
    ldflags.push(`-X ${pkg}.k8sVersionMajor=1`, `-X ${pkg}.k8sVersionMinor=${minor}`);
  return cachedBuild(opts, {
    dir: join(opts.cacheDir, 'bin', `helm-${version}`),
    command: 'helm',
    module: 'helm',
    pkg: 'helm.sh/helm/v3/cmd/helm',
    ldflags: ldflags.join(' '),
  });
}

/** The Prometheus version pinned by infra/build/prometheus/go.mod (its Go module's v0.3MM.P is v3.MM.P). */
export async function pinnedPrometheusVersion(
  buildDir: string,
): Promise<{ module: string; release: string }> {
  const mod = await readFile(join(buildDir, 'prometheus', 'go.mod'), 'utf8');
  const module = /^(?:require\s+|\s+)github\.com\/prometheus\/prometheus (v\S+)/m.exec(mod)?.[1];
  const parts = /^v0\.(\d+)(\d\d)\.(\d+)$/.exec(module ?? '');
  if (!module || !parts)
    throw new Error(`could not read the pinned Prometheus version from ${buildDir}/prometheus/go.mod`);
  return { module, release: `${parts[1]}.${Number(parts[2])}.${parts[3]}` };
}

/**
 * Prometheus' `promtool` or `prometheus` of the pinned version, cached in
 * `<cacheDir>/bin/prometheus-<release>/`, built from the wrapper module infra/build/prometheus the first
 * time. Built with `remove_all_sd` (no service discovery but static and file targets: the tests name their
 * targets) and without `builtinassets` (the web UI's assets are not in the Go module; the HTTP API is).
 */
export async function resolvePrometheusTool(
  opts: Omit<BinaryOptions, 'kubebuilderAssets'>,
  command: 'promtool' | 'prometheus',
): Promise<string> {
  const { release } = await pinnedPrometheusVersion(opts.buildDir);
  // What upstream's promu stamps: `promtool --version` and the server's build info report the release.
  const stamp = 'github.com/prometheus/common/version';
  const ldflags = ['-s', '-w', `-X ${stamp}.Version=${release}`, `-X ${stamp}.Branch=HEAD`].join(' ');
  return cachedBuild(opts, {
    dir: join(opts.cacheDir, 'bin', `prometheus-${release}`),
    command,
    module: 'prometheus',
    pkg: `github.com/prometheus/prometheus/cmd/${command}`,
    ldflags,
    tags: ['remove_all_sd'],
  });
}

/** The cached binary, else `go build` of it into the cache (renamed into place only once complete). */
export async function cachedBuild(
  opts: Omit<BinaryOptions, 'kubebuilderAssets'>,
  tool: {
    dir: string;
    command: string;
    module: string;
    pkg: string;
    ldflags: string;
    tags?: readonly string[];
  },
): Promise<string> {
  const target = join(tool.dir, tool.command);
  if (await isExecutable(target)) return target;
  if (!(await goVersion()))
    throw new Error(`${tool.command} is not in ${tool.dir} and Go is not installed to build it`);
  await mkdir(tool.dir, { recursive: true });
  const partial = `${target}.partial-${process.pid}`;
  const progress = opts.onProgress ?? (() => {});
  progress(`building ${tool.command} from the Go module proxy (first time only)`);
  try {
    await goBuild({
      moduleDir: join(opts.buildDir, tool.module),
      pkg: tool.pkg,
      output: partial,
      ldflags: tool.ldflags,
      tags: tool.tags,
      onProgress: progress,
      terminal: opts.terminal,
      signal: opts.signal,
    });
    await rename(partial, target);
  } finally {
    await rm(partial, { force: true });
  }
  return target;
}

/** The Alertmanager version pinned by infra/build/alertmanager/go.mod. */
export async function pinnedAlertmanagerVersion(buildDir: string): Promise<string> {
  const mod = await readFile(join(buildDir, 'alertmanager', 'go.mod'), 'utf8');
  const version = /^(?:require\s+|\s+)github\.com\/prometheus\/alertmanager (v\S+)/m.exec(mod)?.[1];
  if (!version)
    throw new Error(`could not read the pinned Alertmanager version from ${buildDir}/alertmanager/go.mod`);
  return version;
}

/** The page standing in for Alertmanager's web UI, which the notification tests never open. */
const UI_STAND_IN =
  '<!doctype html><title>Alertmanager</title><p>Built by khrun for its tests without the web UI; the API is at /api/v2.</p>\n';

/**
 * An Alertmanager of the pinned version (the notification tests post khrun's alerts to its API v2), cached
 * in `<cacheDir>/bin/alertmanager-<version>/alertmanager`. Its ui/web.go embeds `ui/app/dist`, which
 * upstream's release builds with npm and the Go module does not ship, so `go build` of the module fails;
 * and `-overlay` may not replace files in the module cache. So the build uses a copy of the module's
 * source (`<cacheDir>/src/alertmanager-<version>`) with a one-page stand-in for each UI, through a
 * `-modfile` that replaces the module with that copy: the Go code built is upstream's, unchanged.
 */
export async function resolveAlertmanager(opts: Omit<BinaryOptions, 'kubebuilderAssets'>): Promise<string> {
  const version = await pinnedAlertmanagerVersion(opts.buildDir);
  const dir = join(opts.cacheDir, 'bin', `alertmanager-${version}`);
  const target = join(dir, 'alertmanager');
  if (await isExecutable(target)) return target;
  if (!(await goVersion()))
    throw new Error(`alertmanager is not in ${dir} and Go is not installed to build it`);
  const moduleDir = join(opts.buildDir, 'alertmanager');
  const { stdout } = await promisify(execFile)(
    'go',
    ['mod', 'download', '-json', `github.com/prometheus/alertmanager@${version}`],
    { cwd: moduleDir },
  );
  const source = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!source)
    throw new Error(`go mod download gave no directory for github.com/prometheus/alertmanager@${version}`);
  const copy = join(opts.cacheDir, 'src', `alertmanager-${version}-${process.pid}`);
  await rm(copy, { recursive: true, force: true });
  await cp(source, copy, { recursive: true });
  await chmodTree(copy);
  for (const ui of ['elm', 'mantine']) {
    await mkdir(join(copy, 'ui', 'app', 'dist', ui), { recursive: true });
    await writeFile(join(copy, 'ui', 'app', 'dist', ui, 'index.html'), UI_STAND_IN);
  }
  const modfile = join(copy, 'khrun-build.mod');
  const mod = await readFile(join(moduleDir, 'go.mod'), 'utf8');
  await writeFile(modfile, `${mod}\nreplace github.com/prometheus/alertmanager => ${copy}\n`);
  await cp(join(moduleDir, 'go.sum'), join(copy, 'khrun-build.sum'));
  await mkdir(dir, { recursive: true });
  const partial = `${target}.partial-${process.pid}`;
  (opts.onProgress ?? (() => {}))('building alertmanager from the Go module proxy (first time only)');
  try {
    const stamp = 'github.com/prometheus/common/version';
    await goBuild({
      moduleDir,
      modfile,
      pkg: 'github.com/prometheus/alertmanager/cmd/alertmanager',
      output: partial,
      ldflags: `-s -w -X ${stamp}.Version=${version.replace(/^v/, '')} -X ${stamp}.Branch=HEAD`,
      onProgress: opts.onProgress ?? (() => {}),
      terminal: opts.terminal,
      signal: opts.signal,
    });
    await rename(partial, target);
  } finally {
    await rm(partial, { force: true });
    await rm(copy, { recursive: true, force: true });
  }
  return target;
}

/** Files from the module cache are read-only: the copy is made writable to add the stand-in pages. */
async function chmodTree(path: string): Promise<void> {
  const entries = await readdir(path, { withFileTypes: true });
  await chmod(path, 0o755);
  for (const e of entries) {
    const p = join(path, e.name);
    if (e.isDirectory()) await chmodTree(p);
    else await chmod(p, 0o644);
  }
}
