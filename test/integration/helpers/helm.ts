import { execFile } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveHelm } from '@khrun/devkit/local/binaries.ts';
import { resolveHelmDocs } from '@khrun/devkit/local/helm-docs.ts';
import type { KubernetesObject } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { inject } from 'vitest';
import { repoRoot } from './khrun.ts';

const run = promisify(execFile);

const cacheDir = () =>
  process.env.KHRUN_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'khrun');

/** helm (infra/build/helm), built from the Go module proxy on first use and cached. */
export function helmBinary(): Promise<string> {
  return resolveHelm({
    cacheDir: cacheDir(),
    buildDir: join(repoRoot, 'infra/build'),
    onProgress: (line) => console.log(`[helm] ${line}`),
  });
}

/** helm-docs (infra/build/helm-docs), likewise. */
export function helmDocsBinary(): Promise<string> {
  return resolveHelmDocs({
    cacheDir: cacheDir(),
    buildDir: join(repoRoot, 'infra/build'),
    onProgress: (line) => console.log(`[helm-docs] ${line}`),
  });
}

/**
 * Runs helm against the suite's cluster (or the kubeconfig given); stdout and stderr together. A failure
 * throws with helm's own output, which names what it refused.
 */
export async function runHelm(helm: string, args: string[], kubeconfig?: string): Promise<string> {
  try {
    const { stdout, stderr } = await run(
      helm,
      [...args, `--kubeconfig=${kubeconfig ?? inject('kubeconfigPath')}`],
      { maxBuffer: 32 * 1024 * 1024 },
    );
    return stdout + stderr;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`helm ${args.join(' ')} failed: ${e.stdout ?? ''}${e.stderr || e.message}`);
  }
}

/**
 * The objects of a multi-document YAML stream, as plain data (js-yaml, without client-node's conversion to
 * typed models, which would drop fields it does not know and so hide a difference).
 */
export function objectsOf(yaml: string): KubernetesObject[] {
  return (loadAll(yaml) as Array<KubernetesObject | null>).filter((doc): doc is KubernetesObject =>
    Boolean(doc?.kind),
  );
}

/** Objects keyed by kind/namespace/name. */
export function byKey(yaml: string): Map<string, KubernetesObject> {
  return new Map(
    objectsOf(yaml).map((o) => [`${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`, o]),
  );
}
