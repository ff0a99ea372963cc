import { readFileSync } from 'node:fs';
import { loadYaml } from '@kubernetes/client-node';

/**
 * The name of the kubeconfig cluster extension that says where pods of that cluster reach the machine
 * the kubeconfig is used on: `khrun local up` writes it, so `khrun run` against the local cluster hosts
 * its report endpoint at a reachable address without flags, and the product never imports the devkit
 * (infra/devkit).
 * kubectl keeps such extensions (minikube writes one the same way):
 *
 *   clusters:
 *   - name: khrun-local
 *     cluster:
 *       server: https://10.200.0.1:6443
 *       extensions:
 *       - name: khrun.dev/report-host
 *         extension: { host: 10.200.0.1 }
 */
export const REPORT_HOST_EXTENSION = 'khrun.dev/report-host';

interface NamedExtension {
  name?: unknown;
  extension?: { host?: unknown };
}
interface KubeconfigDocument {
  clusters?: Array<{ name?: unknown; cluster?: { extensions?: NamedExtension[] } }>;
}

/** The kubeconfig text with the report host extension on every cluster (replacing an older one). */
export function withReportHost(kubeconfigText: string, host: string): string {
  const doc = loadYaml<KubeconfigDocument & Record<string, unknown>>(kubeconfigText);
  for (const entry of doc.clusters ?? []) {
    if (!entry.cluster) continue;
    const others = (entry.cluster.extensions ?? []).filter((e) => e.name !== REPORT_HOST_EXTENSION);
    entry.cluster.extensions = [...others, { name: REPORT_HOST_EXTENSION, extension: { host } }];
  }
  return JSON.stringify(doc, null, 2);
}

/** The report host recorded for the named cluster in the first of the files that has one. */
export function reportHostFromKubeconfig(files: readonly string[], clusterName: string): string | undefined {
  for (const file of files) {
    let doc: KubeconfigDocument | undefined;
    try {
      doc = loadYaml<KubeconfigDocument>(readFileSync(file, 'utf8'));
    } catch {
      continue; // unreadable here means loadKubeConfig already used another file
    }
    const cluster = doc?.clusters?.find((c) => c.name === clusterName)?.cluster;
    const host = cluster?.extensions?.find((e) => e.name === REPORT_HOST_EXTENSION)?.extension?.host;
    if (typeof host === 'string' && host !== '') return host;
  }
  return undefined;
}
