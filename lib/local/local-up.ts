import { copyFile, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { EXIT } from '../commands/exit-codes.ts';
import { startLocalCluster } from './cluster.ts';

export interface LocalUpOptions {
  dir: string;
  root: string;
  cacheDir: string;
  kubebuilderAssets?: string;
  signal: AbortSignal;
  write: (line: string) => void;
}

/** `khrun local up`: the local cluster in the foreground until SIGINT/SIGTERM, then a full teardown. */
export async function localUpCommand(opts: LocalUpOptions): Promise<number> {
  const startedMs = Date.now();
  const cluster = await startLocalCluster({
    kubebuilderAssets: opts.kubebuilderAssets,
    cacheDir: opts.cacheDir,
    buildDir: join(opts.root, 'infra/build'),
    crdDir: join(opts.root, 'infra/crds'),
    // Slot 0, always: a second `local up` must fail clearly, and runners find slot 0's address by themselves.
    slot: 0,
    onProgress: (line) => process.stderr.write(`${line}\n`),
    signal: opts.signal,
  });
  const kubeconfig = join(opts.dir, 'kubeconfig');
  try {
    await mkdir(opts.dir, { recursive: true });
    await copyFile(cluster.kubeconfigPath, kubeconfig);
    opts.write(
      `local cluster ready in ${((Date.now() - startedMs) / 1000).toFixed(1)}s (Kubernetes ${cluster.kubernetesVersion}): ` +
        `export KUBECONFIG=${kubeconfig}; stop with Ctrl-C`,
    );
    if (!opts.signal.aborted)
      await new Promise((resolve) => opts.signal.addEventListener('abort', resolve, { once: true }));
    process.stderr.write('stopping the local cluster\n');
    return EXIT.ok;
  } finally {
    await cluster.stop();
    await rm(kubeconfig, { force: true });
  }
}
