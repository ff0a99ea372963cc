import type { V1Pod } from '@kubernetes/client-node';
import { isRunPod } from '../check/run-label.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import { HC_POD } from '../healthcheck/resources.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { runPodsNewestFirst } from '../logs/checker-pods.ts';
import { LogUnavailableError } from '../logs/pod-log.ts';
import { type ReadTail, readLogTail } from '../logs/read-tail.ts';
import { readActiveRun, readLastOutcome } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { paint } from './table.ts';

/** The checker's log tail `khrun describe` shows: of the run it describes, else of the newest pod. */
export type DescribeLog =
  | { pod: string; container: string; tail: ReadTail }
  | { pod: string; container: string; error: string };

/** The pod of the described run (active, else last; by khrun's or v3's run label), else the newest. Pure. */
export function describedPod(view: { state: KhState | null; pods: readonly V1Pod[] }): V1Pod | undefined {
  const uuid = readActiveRun(view.state)?.uuid ?? readLastOutcome(view.state)?.uuid;
  const ofRun = uuid
    ? view.pods.find((p) => isRunPod(p, uuid) || p.metadata?.labels?.[HC_POD.runUuidLabel] === uuid)
    : undefined;
  return ofRun ?? runPodsNewestFirst(view.pods)[0];
}

/**
 * Reads the tail (log-tail.ts's bounds: 20 lines, 4 KiB) of the described pod's first container; a log
 * that cannot be read is shown as why, never fails describe. Undefined when the check has no pod.
 */
export async function readDescribeLog(
  client: KubeClient,
  view: { namespace: string; state: KhState | null; pods: readonly V1Pod[] },
): Promise<DescribeLog | undefined> {
  const pod = describedPod(view);
  const name = pod?.metadata?.name;
  if (!pod || !name) return undefined;
  const container = pod.spec?.containers?.[0]?.name ?? '';
  try {
    return {
      pod: name,
      container,
      tail: await readLogTail(client.core, { namespace: view.namespace, pod: name, container }),
    };
  } catch (error) {
    if (!(error instanceof LogUnavailableError)) throw error;
    return { pod: name, container, error: error.message };
  }
}

/** describe's Log section: every line of the checker's escaped, indented under a title. Pure. */
export function renderDescribeLog(log: DescribeLog, color: boolean): string[] {
  const title = `Log:           pod ${safe(log.pod)}, container ${safe(log.container)}`;
  if ('error' in log) return [title, paint(`  <${safe(log.error)}>`, 'yellow', color)];
  const { lines, truncated, endMissing } = log.tail;
  if (lines.length === 0) return [title, paint('  <empty>', 'dim', color)];
  const cut = endMissing
    ? ' (its last lines are too long: the end is cut; khrun logs prints the whole log)'
    : truncated
      ? ` (last ${lines.length} lines; khrun logs prints the whole log)`
      : '';
  return [`${title}${cut}`, ...lines.map((l) => `  ${safe(l)}`)];
}
