import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, constants, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadAllYaml } from '@kubernetes/client-node';
import { goVersion } from './go-build.ts';
import type { ImageMapEntry } from './kubelet/image-map.ts';
import { parseImageReference } from './kubelet/images.ts';
import { dockerfileCommand } from './kubelet/khrun-image.ts';

const run = promisify(execFile);

/** The module infra/build/kuberhealthy-v2 pins (its go.mod says which version). */
export const KUBERHEALTHY_V2_MODULE = 'github.com/kuberhealthy/kuberhealthy/v2';

/**
 * What the compatibility suite builds from the module: the daemon and the six check programs issue 13 names.
 * Each is `cmd/<name>` in the module, its image `kuberhealthy/<name>` in the module's YAMLs.
 */
export const KUBERHEALTHY_V2_COMMANDS = [
  'kuberhealthy',
  'test-check',
  'pod-status-check',
  'pod-restarts-check',
  'namespace-pod-check',
  'resource-quota-check',
  'daemonset-check',
] as const;

/**
 * The image daemonset-check puts in its DaemonSet when PAUSE_CONTAINER_IMAGE is unset
 * (cmd/daemonset-check/main.go): named by the program, not by a YAML, and run here as a process that
 * only waits for its signal, which is all pause does.
 */
export const DAEMONSET_CHECK_PAUSE_IMAGE = 'gcr.io/google-containers/pause';

export interface KuberhealthyV2Options {
  /** The user's cache directory for khrun (e.g. ~/.cache/khrun). */
  cacheDir: string;
  /** infra/build: the committed wrapper Go modules. */
  buildDir: string;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface KuberhealthyV2Build {
  version: string;
  /** Where the module's sources are (its YAMLs and Dockerfiles): the Go module cache. */
  moduleDir: string;
  /** Holds one executable per KUBERHEALTHY_V2_COMMANDS entry. */
  binDir: string;
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
 * Builds Kuberhealthy v2's daemon and check programs from the Go module proxy (infra/build/kuberhealthy-v2),
 * cached in `<cacheDir>/bin/kuberhealthy-<version>-<hash of go.sum>/`. One `go build` of every package: one
 * invocation shares the compilation of what they have in common (client-go above all).
 */
export async function buildKuberhealthyV2(opts: KuberhealthyV2Options): Promise<KuberhealthyV2Build> {
  const moduleDir = join(opts.buildDir, 'kuberhealthy-v2');
  const mod = await readFile(join(moduleDir, 'go.mod'), 'utf8');
  const version = /^(?:require\s+|\s+)github\.com\/kuberhealthy\/kuberhealthy\/v2 (v\S+)/m.exec(mod)?.[1];
  if (!version)
    throw new Error(`could not read the pinned ${KUBERHEALTHY_V2_MODULE} from ${moduleDir}/go.mod`);
  const hash = createHash('sha256')
    .update(await readFile(join(moduleDir, 'go.sum')))
    .digest('hex')
    .slice(0, 12);
  const binDir = join(opts.cacheDir, 'bin', `kuberhealthy-${version}-${hash}`);
  if (!(await goVersion()))
    throw new Error(
      `Kuberhealthy ${version} is built from the Go module proxy and Go is not installed: install Go 1.26 or newer`,
    );
  const env = { ...process.env, CGO_ENABLED: '0' };
  // `go mod download -json` names the module's directory in the module cache, fetching it first if needed.
  const downloaded = await run('go', ['mod', 'download', '-json', KUBERHEALTHY_V2_MODULE], {
    cwd: moduleDir,
    env,
  });
  const sourceDir = (JSON.parse(downloaded.stdout) as { Dir: string }).Dir;
  const built = async () =>
    (await Promise.all(KUBERHEALTHY_V2_COMMANDS.map((c) => isExecutable(join(binDir, c))))).every(Boolean);
  if (await built()) return { version, moduleDir: sourceDir, binDir };
  const partial = `${binDir}.partial-${process.pid}`;
  const progress = opts.onProgress ?? (() => {});
  progress(
    `building Kuberhealthy ${version} (daemon and 6 checks) from the Go module proxy (first time only)`,
  );
  const started = Date.now();
  try {
    await mkdir(partial, { recursive: true });
    const pkgs = KUBERHEALTHY_V2_COMMANDS.map((c) => `${KUBERHEALTHY_V2_MODULE}/cmd/${c}`);
    await run('go', ['build', '-trimpath', '-o', `${partial}/`, ...pkgs], {
      cwd: moduleDir,
      env,
      maxBuffer: 16 * 1024 * 1024,
      signal: opts.signal,
    }).catch((error: { stderr?: string; message: string }) => {
      throw new Error(`go build of Kuberhealthy ${version} failed: ${error.stderr || error.message}`);
    });
    // Another process may have finished the same build meanwhile: its copy is as good as ours.
    if (!(await built())) {
      await rm(binDir, { recursive: true, force: true });
      await rename(partial, binDir);
    }
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  progress(`  built Kuberhealthy ${version} in ${Math.round((Date.now() - started) / 1000)}s`);
  return { version, moduleDir: sourceDir, binDir };
}

/** The image of every container in a (parsed) manifest, wherever its pod template sits. Pure. */
export function imagesIn(doc: unknown): string[] {
  if (Array.isArray(doc)) return doc.flatMap(imagesIn);
  if (typeof doc !== 'object' || doc === null) return [];
  const record = doc as Record<string, unknown>;
  const own = typeof record.image === 'string' && 'name' in record ? [record.image] : [];
  return [...own, ...Object.values(record).flatMap(imagesIn)];
}

/**
 * The image-map entries for the built programs (pure): each `kuberhealthy/<command>` image the manifests
 * name, any tag, runs `<binDir>/<command>` as its ENTRYPOINT, and a container command naming the image's
 * own program (its Dockerfile's ENTRYPOINT, e.g. `/app/kuberhealthy`) runs the same build.
 */
export function kuberhealthyV2Entries(input: {
  manifests: string[];
  dockerfiles: Readonly<Record<string, string>>;
  binDir: string;
}): ImageMapEntry[] {
  const repositories = new Set<string>();
  for (const text of input.manifests)
    for (const image of imagesIn(loadAllYaml(text))) {
      const name = parseImageReference(image)?.name;
      if (name) repositories.add(name);
    }
  const entries: ImageMapEntry[] = [];
  for (const command of KUBERHEALTHY_V2_COMMANDS) {
    const image = `kuberhealthy/${command}`;
    if (!repositories.has(image)) continue;
    const local = join(input.binDir, command);
    const dockerfile = input.dockerfiles[command];
    const inImage = dockerfile ? dockerfileCommand(dockerfile).entrypoint[0] : undefined;
    entries.push({ image, entrypoint: [local], cmd: [], programs: inImage ? { [inImage]: local } : {} });
  }
  return entries;
}

/** The YAMLs the images are read from: every cmd/*\/*.yaml and deploy/kuberhealthy.yaml of the module. */
export async function kuberhealthyV2Manifests(moduleDir: string): Promise<string[]> {
  const paths = [join(moduleDir, 'deploy/kuberhealthy.yaml')];
  for (const dir of await readdir(join(moduleDir, 'cmd')))
    for (const file of await readdir(join(moduleDir, 'cmd', dir)).catch(() => []))
      if (file.endsWith('.yaml')) paths.push(join(moduleDir, 'cmd', dir, file));
  return Promise.all(paths.map((p) => readFile(p, 'utf8')));
}

/**
 * The process kubelet's image map for Kuberhealthy v2: built (or found cached) first, then one entry per
 * `kuberhealthy/<command>` image the module's own YAMLs name, and daemonset-check's pause image.
 */
export async function kuberhealthyV2ImageMap(opts: KuberhealthyV2Options): Promise<ImageMapEntry[]> {
  const build = await buildKuberhealthyV2(opts);
  const dockerfiles: Record<string, string> = {};
  for (const command of KUBERHEALTHY_V2_COMMANDS)
    dockerfiles[command] = await readFile(join(build.moduleDir, 'cmd', command, 'Dockerfile'), 'utf8');
  const entries = kuberhealthyV2Entries({
    manifests: await kuberhealthyV2Manifests(build.moduleDir),
    dockerfiles,
    binDir: build.binDir,
  });
  const sleep = (await run('sh', ['-c', 'command -v sleep'])).stdout.trim();
  entries.push({ image: DAEMONSET_CHECK_PAUSE_IMAGE, entrypoint: [sleep, 'infinity'], cmd: [] });
  return entries;
}
