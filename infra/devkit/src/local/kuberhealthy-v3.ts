import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, constants, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { goBuild, goVersion, type Terminal } from './go-build.ts';
import type { ImageMapEntry } from './kubelet/image-map.ts';

const run = promisify(execFile);

/** The Go package of Kuberhealthy v3.0.0's controller, pinned by infra/build/kuberhealthy-v3. */
export const KUBERHEALTHY_V3_PACKAGE = 'github.com/kuberhealthy/kuberhealthy/v3/cmd/kuberhealthy';

/**
 * The image names v3.0.0's own manifests give the controller: `:main` in deploy/kustomize/base (and the
 * chart's imageURL example), `:v3.0.0` the release tag (docs/BUILD_AND_RELEASE.MD). Both exact tags, so
 * they win over any bare `kuberhealthy/kuberhealthy` entry (v2's image is the same repository).
 */
export const KUBERHEALTHY_V3_IMAGES = [
  'docker.io/kuberhealthy/kuberhealthy:main',
  'docker.io/kuberhealthy/kuberhealthy:v3.0.0',
] as const;

/** The wrapper module's files whose content decides the build: the cache key follows the pin. */
const MODULE_FILES = ['go.mod', 'go.sum', 'tools.go'] as const;

/**
 * Kuberhealthy v3.0.0's controller, built once from the Go module proxy into
 * `<cacheDir>/bin/kuberhealthy-v3.0.0-<hash>/kuberhealthy` (hash of the wrapper module's files), renamed into
 * place only once complete so a killed build leaves nothing that looks finished.
 */
export async function kuberhealthyV3Binary(opts: {
  /** infra/build: the committed wrapper Go modules. */
  buildDir: string;
  /** The user's cache directory for khrun (e.g. ~/.cache/khrun). */
  cacheDir: string;
  onProgress?: (line: string) => void;
  terminal?: Terminal;
  signal?: AbortSignal;
}): Promise<string> {
  const moduleDir = join(opts.buildDir, 'kuberhealthy-v3');
  const hash = createHash('sha256');
  for (const file of MODULE_FILES) hash.update(await readFile(join(moduleDir, file)));
  const dir = join(opts.cacheDir, 'bin', `kuberhealthy-v3.0.0-${hash.digest('hex').slice(0, 12)}`);
  const target = join(dir, 'kuberhealthy');
  try {
    await access(target, constants.X_OK);
    return target;
  } catch {
    // not built yet
  }
  if (!(await goVersion())) throw new Error(`${target} is not built and Go is not installed to build it`);
  await mkdir(dir, { recursive: true });
  const partial = `${target}.partial-${process.pid}`;
  const progress = opts.onProgress ?? (() => {});
  progress('building Kuberhealthy v3.0.0 from the Go module proxy (first time only)');
  try {
    await goBuild({
      moduleDir,
      pkg: KUBERHEALTHY_V3_PACKAGE,
      output: partial,
      // GitRevision is what v3 logs and shows as its build; upstream sets it the same way (-X).
      ldflags: '-s -w -X main.GitRevision=v3.0.0',
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

/**
 * The process kubelet's image-map entries for v3's image names: the built binary is the image's
 * entrypoint (upstream's Containerfile: ENTRYPOINT ["/app/kuberhealthy"]; configuration is environment only).
 */
export function kuberhealthyV3ImageMap(binary: string): ImageMapEntry[] {
  return KUBERHEALTHY_V3_IMAGES.map((image) => ({
    image,
    entrypoint: [binary],
    cmd: [],
    // The Containerfile's path of the program, for a manifest that names it as command.
    programs: { '/app/kuberhealthy': binary },
  }));
}

/**
 * Where Go keeps the pinned v3.0.0 module's sources (its deploy/ manifests, docs and tests): `go mod
 * download -json` from the wrapper module, so it follows the pin and GOMODCACHE and fetches it if missing.
 */
export async function kuberhealthyV3ModuleDir(buildDir: string): Promise<string> {
  const { stdout } = await run(
    'go',
    ['mod', 'download', '-json', 'github.com/kuberhealthy/kuberhealthy/v3'],
    {
      cwd: join(buildDir, 'kuberhealthy-v3'),
    },
  );
  const dir = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!dir)
    throw new Error(
      `go mod download found no directory for Kuberhealthy v3 from ${buildDir}/kuberhealthy-v3`,
    );
  return dir;
}
