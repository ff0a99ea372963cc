import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { CHECK_NAME_LABEL, RUN_ID_LABEL } from '../../../../lib/check/pod-builder.ts';
import { waitForSet } from '../../../../lib/kube/list-watch.ts';
import { readHistory } from '../../../../lib/state/history.ts';
import { readActiveRun, readLastOutcome } from '../../../../lib/state/khstate.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../../../lib/state/resources.ts';
import { readTotals } from '../../../../lib/state/totals.ts';

/** A Go duration as time.Duration.String() writes it (v2 readers parse RunDuration with time.ParseDuration). */
export const GO_DURATION = /^(0s|(\d+h)?(\d+m)?(\d+(\.\d+)?(ns|µs|us|ms|s))?)$/;

const isTerminal = (p: V1Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';

/**
 * What is wrong with a khstate after a run ended (empty: nothing): a run still active, a required field
 * of the v2 schema missing or mistyped, a RunDuration Go cannot parse, a spec.uuid that is not the last
 * recorded run's.
 */
export function stateProblems(state: KhState | null, namespace: string): string[] {
  if (!state) return ['no khstate'];
  const problems: string[] = [];
  const active = readActiveRun(state);
  if (active) problems.push(`a run is still active (runner ${active.runner})`);
  const s = state.spec as unknown as Record<string, unknown>;
  if (typeof s.OK !== 'boolean') problems.push('spec.OK is not a boolean');
  if (!Array.isArray(s.Errors) || !s.Errors.every((e) => typeof e === 'string'))
    problems.push('spec.Errors is not a list of strings');
  if (typeof s.RunDuration !== 'string' || !GO_DURATION.test(s.RunDuration))
    problems.push(`spec.RunDuration ${JSON.stringify(s.RunDuration)} is not a Go duration`);
  if (s.Namespace !== namespace) problems.push(`spec.Namespace is ${JSON.stringify(s.Namespace)}`);
  for (const field of ['Node', 'AuthoritativePod', 'uuid'])
    if (typeof s[field] !== 'string') problems.push(`spec.${field} is not a string`);
  if (s.LastRun != null && Number.isNaN(new Date(String(s.LastRun)).getTime()))
    problems.push(`spec.LastRun ${JSON.stringify(s.LastRun)} is not a time`);
  const last = readLastOutcome(state);
  if (last && last.uuid !== s.uuid) problems.push('spec.uuid is not the last recorded run');
  return problems;
}

/** How many outcomes the khstate has recorded over its life (its totals annotation). */
export function recordedOutcomes(state: KhState | null): number {
  const t = readTotals(state ?? undefined);
  return t.succeeded + t.failed + t.timedOut + t.executionError + t.skipped;
}

export { readHistory };

export async function checkPods(kc: KubeConfig, namespace: string, check: string): Promise<V1Pod[]> {
  return (
    await kc
      .makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace, labelSelector: `${CHECK_NAME_LABEL}=${check}` })
  ).items;
}

/**
 * Waits, by watch, until no checker pod of the check is live (every one finished, or gone). A pod being
 * deleted counts as live until it is gone: an orphan is a pod that keeps running.
 */
export function noLivePods(
  kc: KubeConfig,
  namespace: string,
  check: string,
  timeoutMs = 30_000,
): Promise<V1Pod[]> {
  return waitForSet<V1Pod, V1Pod[]>({
    kc,
    path: `/api/v1/namespaces/${namespace}/pods`,
    labelSelector: `${CHECK_NAME_LABEL}=${check}`,
    decide: (items) => {
      const pods = [...items.values()];
      return pods.every((p) => isTerminal(p) && !p.metadata?.deletionTimestamp) ? pods : undefined;
    },
    timeoutMs,
    description: `no live checker pod of ${namespace}/${check}`,
  });
}

/**
 * The check's pods once none is live (noLivePods), or as they are when some still are after timeoutMs:
 * for a fault row, which must be written whatever the pods do; `live` are those still running or going.
 */
export async function podsLeft(
  kc: KubeConfig,
  namespace: string,
  check: string,
  timeoutMs = 30_000,
): Promise<{ pods: V1Pod[]; live: V1Pod[] }> {
  const pods = await noLivePods(kc, namespace, check, timeoutMs).catch(() => checkPods(kc, namespace, check));
  return { pods, live: pods.filter((p) => !isTerminal(p) || p.metadata?.deletionTimestamp) };
}

/** Waits, by watch, for the first pod of the check that satisfies decide. */
export function waitForCheckPod(
  kc: KubeConfig,
  namespace: string,
  check: string,
  decide: (pod: V1Pod) => boolean,
  description: string,
  timeoutMs = 60_000,
): Promise<V1Pod> {
  return waitForSet<V1Pod, V1Pod>({
    kc,
    path: `/api/v1/namespaces/${namespace}/pods`,
    labelSelector: `${CHECK_NAME_LABEL}=${check}`,
    decide: (items) => [...items.values()].find(decide),
    timeoutMs,
    description: `${namespace}/${check}: ${description}`,
  });
}

export const isRunning = (p: V1Pod) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp;

/** Waits, by watch, until the khstate satisfies decide (rejects after timeoutMs, or once signal aborts). */
export function waitForState<R>(
  kc: KubeConfig,
  namespace: string,
  check: string,
  decide: (state: KhState | null) => R | undefined,
  description: string,
  timeoutMs = 60_000,
  signal?: AbortSignal,
): Promise<R> {
  return waitForSet<KhState, R>({
    kc,
    path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${namespace}/${KHSTATE_PLURAL}`,
    fieldSelector: `metadata.name=${check}`,
    decide: (items) => decide(items.get(`${namespace}/${check}`) ?? null),
    timeoutMs,
    description: `khstate ${namespace}/${check}: ${description}`,
    ...(signal ? { signal } : {}),
  });
}

/** The env value a checker pod was created with. */
export function podEnv(pod: V1Pod, name: string): string | undefined {
  return pod.spec?.containers?.[0]?.env?.find((e) => e.name === name)?.value;
}

export const runIdOf = (pod: V1Pod) => pod.metadata?.labels?.[RUN_ID_LABEL];
