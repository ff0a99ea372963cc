import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { withReportHost } from '../../../../lib/config/kubeconfig-report-host.ts';
import { EXIT } from '../../../../lib/core/exit-codes.ts';
import { startLocalCluster } from './cluster.ts';
import { ensureImageBundle } from './up-image.ts';

export interface LocalUpOptions {
  dir: string;
  root: string;
  cacheDir: string;
  kubebuilderAssets?: string;
  /**
   * `--image-map FILE`: what containers without `command` run on the process kubelet (the format is in
   * kubelet/image-map.ts); khrun's own image is built in.
   */
  imageMapFile?: string;
  /** The developer commands, which no CLI bundle holds (the checkout stamp records them). */
  devCommands: readonly string[];
  signal: AbortSignal;
  write: (line: string) => void;
}

/** `khrun local up`: the local cluster in the foreground until SIGINT/SIGTERM, then a full teardown. */
export async function localUpCommand(opts: LocalUpOptions): Promise<number> {
  const startedMs = Date.now();
  // Image `khrun` runs the checkout's current bundle: a fresh clone's tick pods start without npm run build.
  const image = await ensureImageBundle({ root: opts.root, devCommands: opts.devCommands, nowMs: startedMs });
  if (image.built)
    process.stderr.write(`built the khrun image's bundle (${image.built}) in ${image.distDir}\n`);
  const cluster = await startLocalCluster({
    kubebuilderAssets: opts.kubebuilderAssets,
    cacheDir: opts.cacheDir,
    buildDir: join(opts.root, 'infra/build'),
    crdDir: join(opts.root, 'infra/crds'),
    imageMapFile: opts.imageMapFile,
    khrunDistDir: image.distDir,
    // Slot 0, always: a second `local up` must fail clearly.
    slot: 0,
    onProgress: (line) => process.stderr.write(`${line}\n`),
    terminal: { isTTY: Boolean(process.stderr.isTTY), write: (text) => process.stderr.write(text) },
    signal: opts.signal,
  });
  const kubeconfig = join(opts.dir, 'kubeconfig');
  try {
    await mkdir(opts.dir, { recursive: true });
    // The kubeconfig carries where pods reach this machine, so `khrun run` hosts its report endpoint there
    // without --report-host (lib/config/kubeconfig-report-host.ts reads it).
    const text = await readFile(cluster.kubeconfigPath, 'utf8');
    await writeFile(kubeconfig, withReportHost(text, cluster.hostIp), { mode: 0o600 });
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
