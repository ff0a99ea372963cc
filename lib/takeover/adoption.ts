import type { V1Pod } from '@kubernetes/client-node';
import { isRunPod } from '../check/run-label.ts';
import { ANNOTATION, readActiveRun } from '../state/khstate.ts';
import type { KhCheck, KhState } from '../state/resources.ts';
import { installRef, type KuberhealthyInstall } from './installations.ts';
import { readOwnerMarker, withOwnerMarker } from './owner-marker.ts';
import { foreignRunUuid } from './ownership.ts';

const key = (o: { metadata: { namespace: string; name: string } }) =>
  `${o.metadata.namespace}/${o.metadata.name}`;

/**
 * The khstates a Kuberhealthy ran, that khrun takes over (pure): those of khchecks it targets. A khstate
 * without a khcheck (a khjob's, or an orphan v2's reaper would delete) is not a check khrun runs. A
 * HealthCheck is its own check.
 */
export function statesInScope(
  install: KuberhealthyInstall,
  checks: readonly Pick<KhCheck, 'metadata'>[],
  states: readonly KhState[],
): KhState[] {
  const checkKeys = new Set(checks.map(key));
  return states.filter(
    (s) => checkKeys.has(key(s)) && (install.targets === 'all' || s.metadata.namespace === install.targets),
  );
}

/**
 * The run a Kuberhealthy had in flight on a state (pure): v2's spec.uuid no record of khrun's names, or a
 * run held by the store's foreignRunner (v3's status.currentUUID without khrun's lease).
 */
export function inFlightRunUuid(state: KhState, foreignRunner: string | undefined): string | undefined {
  const run = readActiveRun(state);
  return (
    foreignRunUuid(state, undefined) ??
    (foreignRunner !== undefined && run?.runner === foreignRunner ? run.uuid : undefined)
  );
}

/**
 * The state taken over: the owner mark, and, on a HealthCheck, v3's run in flight closed (its currentUUID
 * cleared, no result counted: its checker reports to a controller that is gone); v3's lastRunUnix stays,
 * so khrun's next run is due one runInterval after v3's last start. On a khstate nothing else: v2's spec (OK, Errors, LastRun, RunDuration,
 * AuthoritativePod, uuid) stays as Kuberhealthy wrote it, so the status page, metrics and history go on
 * from it; khrun's next run is due at once (a khstate no run of khrun's started is due), which also
 * replaces the run Kuberhealthy had in flight. Undefined when already taken over from this install.
 */
export function adoptedState(
  state: KhState,
  install: KuberhealthyInstall,
  nowMs: number,
  foreignRunner?: string,
): KhState | undefined {
  const marker = readOwnerMarker(state);
  const foreignRun = foreignRunner !== undefined && readActiveRun(state)?.runner === foreignRunner;
  if (
    marker?.owner === 'khrun' &&
    marker.from === installRef(install) &&
    !foreignRunUuid(state, marker) &&
    !foreignRun
  )
    return undefined;
  const { [ANNOTATION.run]: _closed, ...kept } = state.metadata.annotations ?? {};
  const closed = foreignRun ? { ...state, metadata: { ...state.metadata, annotations: kept } } : state;
  return withOwnerMarker(closed, {
    owner: 'khrun',
    from: installRef(install),
    atMs: nowMs,
    uuid: state.spec?.uuid ?? '',
  });
}

/**
 * The checker pods of a run Kuberhealthy had in flight when it was scaled down (pure): not finished, and
 * of the run inFlightRunUuid names (on the state before adoption). Their reports would go to a daemon that is
 * gone (v2 waits for them until the check's timeout); removing them lets khrun's next run start now.
 */
export function orphanedPods(state: KhState, pods: readonly V1Pod[], foreignRunner?: string): V1Pod[] {
  const uuid = inFlightRunUuid(state, foreignRunner);
  if (!uuid) return [];
  return pods.filter(
    (p) => isRunPod(p, uuid) && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed',
  );
}

/** The khstate handed back (pure), or undefined when khrun did not take it over from this install. */
export function handedBackState(
  state: KhState,
  install: KuberhealthyInstall,
  nowMs: number,
): KhState | undefined {
  const marker = readOwnerMarker(state);
  if (marker?.owner !== 'khrun' || marker.from !== installRef(install)) return undefined;
  return withOwnerMarker(state, { owner: 'kuberhealthy', to: installRef(install), atMs: nowMs });
}

/**
 * The runs of khrun still live on handed-back khstates (pure): handback waits for these to be recorded
 * (or to pass their deadline) before Kuberhealthy starts, so no check runs twice at once.
 */
export function liveRuns(
  states: readonly KhState[],
  nowMs: number,
): { check: string; uuid: string; deadlineMs: number }[] {
  return states.flatMap((s) => {
    const run = readActiveRun(s);
    return run && nowMs < run.deadlineMs
      ? [{ check: key(s), uuid: run.uuid, deadlineMs: run.deadlineMs }]
      : [];
  });
}
