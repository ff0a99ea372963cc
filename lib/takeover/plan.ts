import type { KhState } from '../state/resources.ts';
import {
  adoptedState,
  handedBackState,
  inFlightRunUuid,
  liveRuns,
  orphanedPods,
  statesInScope,
} from './adoption.ts';
import { findKuberhealthy, installRef, type KuberhealthyInstall } from './installations.ts';
import { readOwnerMarker } from './owner-marker.ts';
import type { TakeoverKube } from './port.ts';
import { selectInstall } from './select-install.ts';
import { statesOf, type TakeoverDeps } from './take-over.ts';

/** What `khrun takeover` would do now, read and decided as takeover decides it, nothing written. */
export type TakeoverPlan =
  | {
      kind: 'plan';
      install: KuberhealthyInstall;
      /** Replicas it has now; takeover scales it to 0 and records this count for handback. */
      replicas: number;
      /** The checks (namespace/name) khrun would mark as its own and run from then on. */
      takeOver: string[];
      /** Of those, the ones whose run in flight would be stopped: how many of Kuberhealthy's checker pods removed. */
      inFlight: { check: string; pods: number }[];
      /** Already taken over from this Kuberhealthy: left as they are. */
      unchanged: string[];
    }
  | { kind: 'not-found' | 'unsupported'; message: string };

const ref = (s: KhState) => `${s.metadata.namespace}/${s.metadata.name}`;

/**
 * `khrun takeover --dry-run`: the Kuberhealthy takeover would act on, and what it would do to it and to the
 * states of its checks, decided by the same functions takeover uses (selectInstall, statesInScope,
 * adoptedState, orphanedPods) over the same reads. Reads only: lists Deployments, khchecks, khstates (v3:
 * HealthChecks) and the pods of checks with a run in flight.
 */
export async function planTakeOver(
  deps: Pick<TakeoverDeps, 'clock'> & { kube: TakeoverKube },
  opts: { from?: string; namespace?: string },
): Promise<TakeoverPlan> {
  const selected = selectInstall(findKuberhealthy(await deps.kube.listDeployments()), {
    named: opts.from,
    namespace: opts.namespace,
    want: 'running',
  });
  if (selected.kind !== 'found') return { kind: 'not-found', message: selected.message };
  const install = selected.install;
  const store = statesOf(deps.kube, install);
  if (!store)
    return {
      kind: 'unsupported',
      message: `${installRef(install)} is Kuberhealthy v3: this khrun cannot reach HealthChecks`,
    };
  const states = await store.listStates();
  const checks = install.line === 'v3' ? states : await deps.kube.listChecks();
  const plan = {
    takeOver: [] as string[],
    inFlight: [] as { check: string; pods: number }[],
    unchanged: [] as string[],
  };
  for (const state of statesInScope(install, checks, states)) {
    if (!adoptedState(state, install, deps.clock.nowMs(), store.foreignRunner)) {
      plan.unchanged.push(ref(state));
      continue;
    }
    plan.takeOver.push(ref(state));
    if (!inFlightRunUuid(state, store.foreignRunner)) continue;
    const pods = await store.listCheckPods(state.metadata.namespace, state.metadata.name);
    const orphans = orphanedPods(state, pods, store.foreignRunner).length;
    if (orphans > 0) plan.inFlight.push({ check: ref(state), pods: orphans });
  }
  return { kind: 'plan', install, replicas: install.replicas, ...plan };
}

/** What `khrun handback` would do now, nothing written. */
export type HandbackPlan =
  | {
      kind: 'plan';
      install: KuberhealthyInstall;
      /** The replicas it would be scaled back to. */
      replicas: number;
      /** The checks khrun would mark as Kuberhealthy's again (and refuse from then on). */
      handBack: string[];
      /** khrun's runs of those still live: handback would wait for them (at most until their deadlines). */
      waitFor: string[];
    }
  | { kind: 'not-found'; message: string };

/** `khrun handback --dry-run`: decided by handback's own functions over the same reads; reads only. */
export async function planHandBack(
  deps: Pick<TakeoverDeps, 'clock'> & { kube: TakeoverKube },
  opts: { to?: string; namespace?: string; replicas?: number },
): Promise<HandbackPlan> {
  const selected = selectInstall(findKuberhealthy(await deps.kube.listDeployments()), {
    named: opts.to,
    namespace: opts.namespace,
    want: 'taken-over',
  });
  if (selected.kind !== 'found') return { kind: 'not-found', message: selected.message };
  const install = selected.install;
  const store = statesOf(deps.kube, install);
  if (!store) return { kind: 'not-found', message: `${installRef(install)} is v3: HealthChecks unreachable` };
  const nowMs = deps.clock.nowMs();
  const mine = (await store.listStates()).filter(
    (s) => readOwnerMarker(s)?.owner === 'khrun' && handedBackState(s, install, nowMs) !== undefined,
  );
  return {
    kind: 'plan',
    install,
    replicas: opts.replicas ?? install.takenOver?.replicas ?? 1,
    handBack: mine.map(ref),
    waitFor: liveRuns(mine, nowMs).map((r) => r.check),
  };
}
