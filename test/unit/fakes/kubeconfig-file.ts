import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A kubeconfig file in a fresh temp directory: one cluster `test` at a made-up address (nothing connects),
 * its context's namespace as given. remove() deletes the directory.
 */
export function kubeconfigFile(
  opts: { contextNamespace?: string; clusterExtra?: Record<string, unknown> } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'khrun-config-'));
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server: 'https://192.0.2.1:6443', ...opts.clusterExtra } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [
        {
          name: 'test',
          context: {
            cluster: 'test',
            user: 'u',
            ...(opts.contextNamespace ? { namespace: opts.contextNamespace } : {}),
          },
        },
      ],
      'current-context': 'test',
    }),
  );
  return { dir, path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
