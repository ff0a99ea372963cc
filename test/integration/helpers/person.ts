import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { DEPLOY_NAMESPACE, kubectl, serviceAccountKubeConfig, writeKubeConfig } from './deploy.ts';
import type { KhrunResult } from './khrun.ts';
import { repoRoot } from './khrun.ts';

/**
 * A person with khrun's rerun rights, as docs/rerun.md tells an admin to grant them (its kubectl commands):
 * the ClusterRole khrun-rerun in the checks' namespace, the Role khrun-rerun in khrun's namespace. The
 * person is a ServiceAccount here (a token the API server authenticates, no admin rights); its kubeconfig
 * is written fresh, so it carries no khrun.dev/report-host extension, as a real cluster's does not.
 * `roles`: false to grant nothing in khrun's namespace but `extraKhrunRole` (a Role of the caller's).
 */
export async function person(
  admin: KubeConfig,
  opts: { namespace: string; name: string; roles?: boolean; extraKhrunRole?: string },
): Promise<{ kubeconfig: string; cleanup: () => Promise<void> }> {
  const { namespace, name } = opts;
  await admin
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  const subject = `--serviceaccount=${namespace}:${name}`;
  const binding = `khrun-rerun-${namespace}-${name}`;
  await kubectl(['-n', namespace, 'create', 'rolebinding', binding, '--clusterrole=khrun-rerun', subject]);
  const khrunRole = opts.roles === false ? opts.extraKhrunRole : 'khrun-rerun';
  if (khrunRole)
    await kubectl(['-n', DEPLOY_NAMESPACE, 'create', 'rolebinding', binding, `--role=${khrunRole}`, subject]);
  const kc = await serviceAccountKubeConfig(admin, namespace, name);
  return {
    kubeconfig: await writeKubeConfig(kc, `${namespace}-${name}`),
    cleanup: async () => {
      await kubectl(['-n', DEPLOY_NAMESPACE, 'delete', 'rolebinding', binding, '--ignore-not-found']).catch(
        () => undefined,
      );
    },
  };
}

/**
 * A khrun command as a person runs it from a laptop shell: their kubeconfig, and none of the variables
 * that would say where checker pods report (the test process may carry them).
 */
export function asPerson(
  kubeconfig: string,
  args: string[],
  opts: { onStderr?: (text: string, child: ReturnType<typeof spawn>) => void } = {},
): Promise<KhrunResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, KUBECONFIG: kubeconfig, POWERTOOLS_LOG_LEVEL: 'INFO' };
  for (const variable of [
    'KHRUN_REPORT_HOST',
    'KHRUN_REPORT_PORT',
    'POD_IP',
    'POD_NAME',
    'POD_NAMESPACE',
    'KHRUN_NAMESPACE',
    'KH_EXTERNAL_REPORTING_URL',
    'CHECK_NAMESPACE',
  ])
    delete env[variable];
  const child = spawn(process.execPath, [join(repoRoot, 'functions/khrun.mjs'), ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
    opts.onStderr?.(stderr, child);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
