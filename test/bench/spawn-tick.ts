import { join } from 'node:path';
import { DEPLOY_NAMESPACE } from '../../infra/helm/render-deploy.ts';
import { PRELOAD } from './scale-setup.ts';
import { spawnToExit } from './spawn-khrun.ts';

/**
 * `khrun tick` over one namespace, the bundle spawned with the peak-memory preload, Jobs into khrun's namespace
 * (as the tick CronJob runs it); env adds KUBECONFIG and any setting (KHRUN_BATCH_SIZE).
 */
export function spawnTick(
  dist: string,
  namespace: string,
  env: Record<string, string>,
  /** Node flags before the bundle (e.g. --cpu-prof). */
  nodeArgs: readonly string[] = [],
) {
  return spawnToExit(
    [
      process.execPath,
      ...nodeArgs,
      '--import',
      PRELOAD,
      join(dist, 'khrun.mjs'),
      'tick',
      '--namespaces',
      namespace,
      '--job-namespace',
      DEPLOY_NAMESPACE,
    ],
    { KHRUN_FIRST_RUN_JITTER: '0s', ...env },
  );
}
