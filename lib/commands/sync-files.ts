import type { V1PodTemplate, V1PodTemplateSpec } from '@kubernetes/client-node';
import { placeholderRunnerTemplate, type RunnerTemplateRef } from '../config/runner-template.ts';
import { isObject } from '../convert/field-path.ts';
import { classifyDocument } from '../convert/kinds.ts';
import { parseDocuments } from '../convert/parse-documents.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { KhCheck } from '../state/resources.ts';
import type { SyncKube } from '../sync/sync.ts';

/** A file sync cannot use: which, and why (exit 2, nothing printed). */
export class SyncFileError extends Error {
  override readonly name = 'SyncFileError';
}

/** What `khrun sync --dry-run -f FILE...` renders from: the files' checks, and the runner template. */
export interface OfflineSync {
  kube: SyncKube;
  template: V1PodTemplateSpec;
  notes: string[];
}

const inScope = (scope: NamespaceScope, namespace: string) =>
  scope === 'all' || scope.namespaces.includes(namespace);

type Named = { metadata: { namespace: string; name: string; uid?: string } };

/** A document's metadata with its namespace filled in (`namespace` when it names none), as kubectl -n does. */
function placed<T>(value: Record<string, unknown>, namespace: string): T & Named {
  const metadata = isObject(value.metadata) ? value.metadata : {};
  return {
    ...value,
    metadata: {
      ...metadata,
      namespace: typeof metadata.namespace === 'string' ? metadata.namespace : namespace,
    },
  } as T & Named;
}

/**
 * The khchecks and HealthChecks of the files as sync's port (offline: nothing is listed from a cluster, no
 * CronJob exists, nothing can be applied), and the runner template: the PodTemplate `ref` names when the
 * files hold it (`kubectl kustomize infra/deploy | khrun sync --dry-run -f - -f checks.yaml`), else the
 * placeholder, with a note. A file that cannot be read or parsed is a SyncFileError.
 */
export async function offlineSync(opts: {
  files: readonly string[];
  /** The namespace of a document that names none. */
  namespace: string;
  template: RunnerTemplateRef;
  readInput: (path: string) => Promise<string>;
}): Promise<OfflineSync> {
  const checks: KhCheck[] = [];
  const healthChecks: HealthCheck[] = [];
  let template: V1PodTemplateSpec | undefined;
  for (const path of opts.files) {
    const origin = path === '-' ? '<stdin>' : path;
    const text = await opts.readInput(path).catch((error: unknown) => {
      throw new SyncFileError(`${origin}: cannot be read (${(error as Error).message})`);
    });
    const parsed = parseDocuments({ origin, text });
    if ('problem' in parsed) throw new SyncFileError(`${origin} ${parsed.problem.problem}; fix the file`);
    for (const { value } of parsed.documents) {
      if (!isObject(value)) continue;
      const kind = classifyDocument(value);
      if (kind.kind === 'check' && kind.check === 'khcheck')
        checks.push(placed<KhCheck>(value, opts.namespace));
      else if (kind.kind === 'check' && kind.check === 'healthcheck')
        healthChecks.push(placed<HealthCheck>(value, opts.namespace));
      else if (value.kind === 'PodTemplate' && value.apiVersion === 'v1') {
        const pt = placed<V1PodTemplate>(value, opts.namespace);
        if (pt.metadata.name === opts.template.name && pt.metadata.namespace === opts.template.namespace)
          template = pt.template;
      }
    }
  }
  const where = `${opts.template.namespace}/${opts.template.name}`;
  const notes = [
    'offline (-f): no cluster was read, so no CronJob is shown deleted; a khcheck read from a file has no ' +
      "uid, so each schedule's minute is spread by namespace/name where a sync against the cluster spreads " +
      'it by the uid, and the ownerReference uid is empty',
  ];
  if (!template) {
    const placeholder = placeholderRunnerTemplate(opts.template);
    notes.unshift(
      `the runner PodTemplate ${where} is not in the files: rendered with a placeholder runner (image ` +
        `${JSON.stringify(placeholder.spec?.containers[0]?.image)}); add the install's manifests with -f ` +
        '(kubectl kustomize infra/deploy | khrun sync --dry-run -f - -f FILE)',
    );
    template = placeholder;
  }
  const refuse = async (): Promise<never> => {
    throw new Error('sync from files is a dry run: it applies and deletes nothing');
  };
  return {
    template,
    notes,
    kube: {
      listChecks: async (scope: NamespaceScope) => checks.filter((c) => inScope(scope, c.metadata.namespace)),
      listHealthChecks: async (scope: NamespaceScope) =>
        healthChecks.filter((h) => inScope(scope, h.metadata.namespace)),
      listManagedCronJobs: async () => [],
      applyCronJob: refuse,
      deleteCronJob: refuse,
    },
  };
}
