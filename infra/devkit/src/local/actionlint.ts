import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type BinaryOptions, cachedBuild } from './binaries.ts';

/** The actionlint version pinned by infra/build/actionlint/go.mod. */
export async function pinnedActionlintVersion(buildDir: string): Promise<string> {
  const mod = await readFile(join(buildDir, 'actionlint', 'go.mod'), 'utf8');
  const version = /^(?:require\s+|\s+)github\.com\/rhysd\/actionlint (v\S+)/m.exec(mod)?.[1];
  if (!version)
    throw new Error(`could not read the pinned actionlint version from ${buildDir}/actionlint/go.mod`);
  return version;
}

/**
 * An actionlint of the pinned version (the linter of the GitHub Actions workflows in .github/workflows),
 * cached in `<cacheDir>/bin/actionlint-<version>/actionlint`, built from the wrapper module
 * infra/build/actionlint the first time. `actionlint -version` reports the pinned version.
 */
export async function resolveActionlint(opts: Omit<BinaryOptions, 'kubebuilderAssets'>): Promise<string> {
  const version = await pinnedActionlintVersion(opts.buildDir);
  return cachedBuild(opts, {
    dir: join(opts.cacheDir, 'bin', `actionlint-${version}`),
    command: 'actionlint',
    module: 'actionlint',
    pkg: 'github.com/rhysd/actionlint/cmd/actionlint',
    ldflags: `-s -w -X github.com/rhysd/actionlint.version=${version}`,
  });
}
