import { access, constants, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { BinaryOptions } from './binaries.ts';
import { goBuild, goVersion } from './go-build.ts';

/** The Go package of helm-docs, pinned by infra/build/helm-docs. */
export const HELM_DOCS_PACKAGE = 'github.com/norwoodj/helm-docs/cmd/helm-docs';

/** The pinned helm-docs version, read from the wrapper module's go.mod (the cache key follows the pin). */
export async function pinnedHelmDocsVersion(buildDir: string): Promise<string> {
  const mod = await readFile(join(buildDir, 'helm-docs', 'go.mod'), 'utf8');
  const version = /^(?:require\s+|\s+)github\.com\/norwoodj\/helm-docs (v\S+)/m.exec(mod)?.[1];
  if (!version) throw new Error(`could not read the helm-docs version from ${buildDir}/helm-docs/go.mod`);
  return version;
}

/**
 * helm-docs (the values table of infra/helm/khrun/README.md, from values.yaml's `# --` comments), built
 * once from the Go module proxy into `<cacheDir>/bin/helm-docs-<version>/helm-docs`, renamed into place
 * only once complete so a killed build leaves nothing that looks finished.
 */
export async function resolveHelmDocs(opts: Omit<BinaryOptions, 'kubebuilderAssets'>): Promise<string> {
  const version = await pinnedHelmDocsVersion(opts.buildDir);
  const dir = join(opts.cacheDir, 'bin', `helm-docs-${version}`);
  const target = join(dir, 'helm-docs');
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
  progress('building helm-docs from the Go module proxy (first time only)');
  try {
    await goBuild({
      moduleDir: join(opts.buildDir, 'helm-docs'),
      pkg: HELM_DOCS_PACKAGE,
      output: partial,
      // The version helm-docs prints in the footer of the README it writes (upstream stamps it the same way).
      ldflags: `-s -w -X main.version=${version.replace(/^v/, '')}`,
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
