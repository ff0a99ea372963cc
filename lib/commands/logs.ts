import type { V1Pod } from '@kubernetes/client-node';
import { EXIT } from '../core/exit-codes.ts';
import type { KindName } from '../core/run-target.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION } from '../healthcheck/resources.ts';
import { KHJOB_PLURAL } from '../job/khjob.ts';
import { ApiErrorKind, apiErrorMessage, classifyApiError } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { findRunPods } from '../logs/find-run-pods.ts';
import { LogUnavailableError, LogUnavailableReason, readPodLog } from '../logs/pod-log.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL } from '../state/resources.ts';
import { humanDuration } from './table.ts';

export interface LogsCommandOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  kind: KindName | undefined;
  previous: boolean;
  container: string | undefined;
  tailLines: number | undefined;
  /** stdout is a terminal: control characters in the log are shown escaped rather than acted on. */
  terminal: boolean;
  nowMs: () => number;
  /** The log (stdout). */
  write: (text: string) => void;
  /** Which pod and container, and errors (stderr). */
  warn: (line: string) => void;
}

const NOUN: Readonly<Record<KindName, string>> = {
  khcheck: 'khcheck',
  khjob: 'khjob',
  healthcheck: 'HealthCheck',
};

const WHERE = {
  khcheck: { group: KH_GROUP, version: KH_VERSION, plural: KHCHECK_PLURAL },
  khjob: { group: KH_GROUP, version: KH_VERSION, plural: KHJOB_PLURAL },
  healthcheck: { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL },
} as const;

/** Whether the object exists (a 403 reads as existing: only the pods are known to be missing then). */
async function exists(client: KubeClient, kind: KindName, namespace: string, name: string): Promise<boolean> {
  try {
    await client.custom.getNamespacedCustomObject({ ...WHERE[kind], namespace, name });
    return true;
  } catch (error) {
    if (classifyApiError(error) === ApiErrorKind.NotFound) return false;
    return true;
  }
}

/** One line about the pod shown: its run's phase and age, and the other containers it has. Pure. */
export function podLine(pod: V1Pod, container: string, nowMs: number): string {
  const created = Date.parse(String(pod.metadata?.creationTimestamp ?? ''));
  const age = Number.isFinite(created) ? `, created ${humanDuration(nowMs - created)} ago` : '';
  const others = (pod.spec?.containers ?? []).map((c) => c.name).filter((n) => n !== container);
  const rest = others.length ? `; other containers: ${others.join(', ')} (-c NAME)` : '';
  return `pod ${pod.metadata?.name ?? '?'} (${pod.status?.phase ?? 'Unknown'}${age}), container ${container}${rest}`;
}

/**
 * `khrun logs CHECK`: the log of the checker pod of the check's last run (or, --previous, the run
 * before), from the finished pods khrun keeps (KHRUN_KEEP_FINISHED_PODS); the pod and container on
 * stderr. Exit 2: no such check, or a request the caller may not make; 1: no pod of that run is kept, or
 * its log cannot be read.
 */
export async function logsCommand(opts: LogsCommandOptions): Promise<number> {
  const { client, namespace, name } = opts;
  let found: Awaited<ReturnType<typeof findRunPods>>;
  try {
    found = await findRunPods(client, { namespace, name, kind: opts.kind });
  } catch (error) {
    if (classifyApiError(error) !== ApiErrorKind.Forbidden) throw error;
    opts.warn(
      `khrun: forbidden (403): cannot list pods in namespace ${namespace} (${safe(apiErrorMessage(error))})`,
    );
    return EXIT.usage;
  }
  const pod = found.pods[opts.previous ? 1 : 0];
  if (!pod && found.pods.length > 0) {
    opts.warn(
      `khrun: only the last run's checker pod of ${NOUN[found.kind]} ${namespace}/${name} is kept, not the one before`,
    );
    return EXIT.runnerError;
  }
  if (!pod) {
    const kinds: KindName[] = opts.kind ? [opts.kind] : ['khcheck', 'healthcheck'];
    const present = await Promise.all(kinds.map((k) => exists(client, k, namespace, name)));
    const kind = kinds.find((_, i) => present[i]);
    if (!kind) {
      const what = opts.kind ? NOUN[opts.kind] : 'khcheck or HealthCheck';
      opts.warn(
        `khrun: no ${what} named ${name} in namespace ${namespace}${opts.kind ? '' : ' (a khjob: --job)'}`,
      );
      return EXIT.usage;
    }
    opts.warn(
      `khrun: no checker pod of ${NOUN[kind]} ${namespace}/${name} is kept: it has not run yet, or its ` +
        'runner keeps no finished pods (KHRUN_KEEP_FINISHED_PODS=0)',
    );
    return EXIT.runnerError;
  }
  const container = opts.container ?? pod.spec?.containers?.[0]?.name ?? '';
  opts.warn(safe(podLine(pod, container, opts.nowMs())));
  try {
    const text = await readPodLog(client.core, {
      namespace,
      pod: pod.metadata?.name ?? '',
      container,
      ...(opts.tailLines === undefined ? {} : { tailLines: opts.tailLines }),
    });
    const body = text.replace(/\n$/, '');
    if (body === '') opts.warn('(the log is empty)');
    // On a terminal every control character but newline and tab is shown escaped; piped, the log as it is.
    else
      opts.write(
        opts.terminal
          ? body
              .split('\t')
              .map((part) => safe(part, { keepNewlines: true }))
              .join('\t')
          : body,
      );
    return EXIT.ok;
  } catch (error) {
    if (!(error instanceof LogUnavailableError)) throw error;
    opts.warn(`khrun: ${safe(error.message)}`);
    return error.reason === LogUnavailableReason.Forbidden ? EXIT.usage : EXIT.runnerError;
  }
}
