import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildBundles } from '@khrun/devkit/build/bundle.ts';
import { resolveBinaries, resolveHelm, resolveKubectl } from '@khrun/devkit/local/binaries.ts';
import type { ImageMapEntry } from '@khrun/devkit/local/kubelet/image-map.ts';
import { kuberhealthyV2ImageMap } from '@khrun/devkit/local/kuberhealthy-v2.ts';
import { kuberhealthyV3Binary, kuberhealthyV3ImageMap } from '@khrun/devkit/local/kuberhealthy-v3.ts';
import { goCheckerV3Binary } from '../helpers/go-checker-v3.ts';
import { goCheckerBinary } from '../helpers/khrun.ts';

export const repoRoot = resolve(import.meta.dirname, '../../..');
const buildDir = join(repoRoot, 'infra/build');

/** Where the pods of khrun's image find its bundles: the process kubelet's /app/dist for it. */
export const TEST_DIST_DIR = join(repoRoot, '.khrun/test-dist');

/**
 * Set by run-lanes.ts once it built the bundles into TEST_DIST_DIR: the lanes' global setups then leave
 * them as they are instead of building them three times at once.
 */
export const TEST_DIST_READY_ENV = 'KHRUN_TEST_DIST_READY';

export function cacheDir(): string {
  return (
    process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun')
  );
}

/**
 * What every lane's global setup needs before its cluster starts, built from the Go module proxy (or found
 * in the cache): Kuberhealthy v2.7.1's daemon and checks and v3.0.0's controller, whose images the process
 * kubelet maps to those builds (the returned entries); kubectl for `kubectl apply -k`; a checker on v2.7.1's
 * Go checkclient. Done here, with no timeout, rather than inside a test on a fresh machine.
 */
export async function buildClusterPrerequisites(
  onProgress: (line: string) => void,
): Promise<ImageMapEntry[]> {
  const opts = { cacheDir: cacheDir(), buildDir, onProgress };
  const v2 = await kuberhealthyV2ImageMap(opts);
  const v3 = kuberhealthyV3ImageMap(await kuberhealthyV3Binary(opts));
  await resolveKubectl(opts);
  await goCheckerBinary();
  return [...v2, ...v3];
}

/**
 * Everything files of more than one lane build on first use, built once before the lanes start
 * (run-lanes.ts), so that on a fresh machine three lanes do not build the same Go module at once: the
 * cluster's binaries, the cluster prerequisites above, helm, and the checker on v3.0.0's checkclient.
 */
export async function buildSharedTools(onProgress: (line: string) => void): Promise<void> {
  const opts = { cacheDir: cacheDir(), buildDir, onProgress };
  await resolveBinaries({ ...opts, kubebuilderAssets: process.env.KUBEBUILDER_ASSETS || undefined });
  await buildClusterPrerequisites(onProgress);
  await resolveHelm(opts);
  await goCheckerV3Binary();
}

/**
 * Builds the bundles (as `npm run build` does) into TEST_DIST_DIR without a moment in which a bundle is
 * missing or half written: into a directory of its own first, then each file renamed into place (rename
 * replaces a file atomically; a process that has it open keeps the one it opened). Pods of earlier runs,
 * or of another lane, may be running those bundles meanwhile.
 */
export async function buildTestDist(): Promise<string> {
  await mkdir(TEST_DIST_DIR, { recursive: true });
  const staging = await mkdtemp(join(repoRoot, '.khrun/test-dist-staging-'));
  try {
    await buildBundles({ root: repoRoot, outdir: staging });
    for (const file of await readdir(staging)) await rename(join(staging, file), join(TEST_DIST_DIR, file));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return TEST_DIST_DIR;
}
