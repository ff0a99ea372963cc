import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import { done, updateKhStateWithRetry, write } from '../kube/cas.ts';
import type { KhState } from '../state/resources.ts';
import { adoptedState, orphanedPods, statesInScope } from './adoption.ts';
import { installRef, type KuberhealthyInstall } from './installations.ts';
import { locateInstall } from './locate.ts';
import type { TakeoverKube } from './port.ts';

export interface TakeoverDeps {
  kube: TakeoverKube;
  clock: Clock;
  log: Log;
}

export type TakeoverResult =
  | {
      kind: 'taken-over';
      install: KuberhealthyInstall;
      /** Replicas it had (restored by handback). */
      replicas: number;
      adopted: string[];
      /** Checks whose run Kuberhealthy had in flight: its orphaned pods removed. */
      closedRuns: string[];
      /** Already taken over by an earlier takeover. */
      unchanged: string[];
    }
  | { kind: 'not-found' | 'unsupported'; message: string };

const ref = (s: KhState) => `${s.metadata.namespace}/${s.metadata.name}`;

/**
 * `khrun takeover`: Kuberhealthy scaled to zero, its pods gone (watched), then its khstates (v2) or
 * HealthChecks (v3) adopted with their results, and the checker pods of runs it had in flight removed. The order is the guarantee: no
 * khstate is marked for khrun while a Kuberhealthy pod can still run its check, so no check runs twice; the
 * adopted checks are due at once, so none waits more than an interval. Rerunning it resumes a takeover
 * interrupted midway (every step is idempotent).
 */
export async function takeOver(
  deps: TakeoverDeps,
  opts: { from?: string; namespace?: string; podsGoneTimeoutMs: number; signal: AbortSignal },
): Promise<TakeoverResult> {
  const located = await locateInstall(deps.kube, {
    named: opts.from,
    namespace: opts.namespace,
    want: 'running',
  });
  if (located.kind === 'not-found') return located;
  if (located.kind === 'unreachable') {
    return {
      kind: 'unsupported',
      message: `${installRef(located.install)} is Kuberhealthy v3: this khrun cannot reach HealthChecks; it was left running`,
    };
  }
  const { install, store } = located;
  const replicas = install.takenOver?.replicas ?? install.replicas;
  if (install.replicas > 0 || !install.takenOver) {
    await deps.kube.scale(install, 0, { replicas, atMs: deps.clock.nowMs() });
    deps.log.info('kuberhealthy scaled to zero', { kuberhealthy: installRef(install), replicas });
  }
  await deps.kube.waitForPodsGone(install, { timeoutMs: opts.podsGoneTimeoutMs, signal: opts.signal });
  deps.log.info('kuberhealthy pods gone', { kuberhealthy: installRef(install) });

  const states = await store.listStates();
  const checks = install.line === 'v3' ? states : await deps.kube.listChecks();
  const result = { adopted: [] as string[], closedRuns: [] as string[], unchanged: [] as string[] };
  for (const listed of statesInScope(install, checks, states)) {
    // The state adopted is decided on: its run in flight is the one whose pods are removed.
    let before: KhState | undefined;
    const adopted = await updateKhStateWithRetry<KhState | undefined>(store, listed.metadata, {
      writer: 'takeover',
      maxAttempts: 4,
      log: deps.log,
      initial: listed,
      decide: (state) => {
        const next = state && adoptedState(state, install, deps.clock.nowMs(), store.foreignRunner);
        before = state ?? undefined;
        return next ? write(next, (written) => written) : done(undefined);
      },
    });
    if (!adopted || !before) {
      result.unchanged.push(ref(listed));
      continue;
    }
    result.adopted.push(ref(listed));
    const pods = await store.listCheckPods(listed.metadata.namespace, listed.metadata.name);
    const orphans = orphanedPods(before, pods, store.foreignRunner);
    for (const pod of orphans)
      await store.removePod(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '', pod.metadata?.uid);
    if (orphans.length) result.closedRuns.push(ref(listed));
    deps.log.info('khstate taken over', { check: ref(listed), orphanedPods: orphans.length });
  }
  return { kind: 'taken-over', install, replicas, ...result };
}
