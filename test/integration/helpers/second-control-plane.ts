import { mkdtemp, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { resolveBinaries } from '@khrun/devkit/local/binaries.ts';
import { type ControlPlane, startControlPlane } from '@khrun/devkit/local/control-plane.ts';

const root = resolve(import.meta.dirname, '../../..');

/**
 * A second, bare control plane (etcd + kube-apiserver only: no scheduler, no controllers) for tests that
 * must stop and start the API server, run a kubelet of their own, or need an API server started with other
 * flags (opts.apiServerArgs: one that does not serve an API, say) without disturbing the shared cluster.
 * Uses the binaries the global setup already resolved (the same cache).
 */
export async function startBareControlPlane(
  advertiseAddress: string,
  opts: { apiServerArgs?: readonly string[] } = {},
): Promise<{ cp: ControlPlane; dir: string; stop(): Promise<void> }> {
  const binaries = await resolveBinaries({
    kubebuilderAssets: process.env.KUBEBUILDER_ASSETS || undefined,
    cacheDir:
      process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun'),
    buildDir: join(root, 'infra/build'),
  });
  const dir = await mkdtemp(join(tmpdir(), 'khrun-bare-cp-'));
  try {
    const cp = await startControlPlane({
      binaries: { ...binaries, kubeControllerManager: undefined, kubeScheduler: undefined },
      dir,
      advertiseAddress,
      apiServerArgs: opts.apiServerArgs,
    });
    return {
      cp,
      dir,
      async stop() {
        await cp.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
