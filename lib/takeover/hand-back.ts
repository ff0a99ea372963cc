import { done, updateKhStateWithRetry, write } from '../kube/cas.ts';
import type { KhState } from '../state/resources.ts';
import { handedBackState, liveRuns } from './adoption.ts';
import { installRef, type KuberhealthyInstall } from './installations.ts';
import { locateInstall } from './locate.ts';
import { readOwnerMarker } from './owner-marker.ts';
import type { TakeoverDeps } from './take-over.ts';

/** A v3 install whose HealthChecks this khrun cannot reach has nothing khrun could hand back. */
export const unreachable = (install: KuberhealthyInstall) => ({
  kind: 'not-found' as const,
  message: `${installRef(install)} is v3: HealthChecks unreachable`,
});

export type HandbackResult =
  | {
      kind: 'handed-back';
      install: KuberhealthyInstall;
      replicas: number;
      handedBack: string[];
      waitedFor: string[];
    }
  | { kind: 'not-found'; message: string };

const ref = (s: KhState) => `${s.metadata.namespace}/${s.metadata.name}`;

/**
 * `khrun handback`: the khstates khrun took over from the install are marked as Kuberhealthy's (from then
 * on khrun starts no run of them: `khrun run` and the tick refuse), khrun's runs still live on them are
 * waited for (watched) until recorded or past their deadline, then Kuberhealthy is scaled back to the
 * replicas it had. It resumes from the same khstates (v2) or HealthChecks (v3): both start every check at
 * start.
 */
export async function handBack(
  deps: TakeoverDeps,
  opts: { to?: string; namespace?: string; replicas?: number; signal: AbortSignal },
): Promise<HandbackResult> {
  const located = await locateInstall(deps.kube, {
    named: opts.to,
    namespace: opts.namespace,
    want: 'taken-over',
  });
  if (located.kind === 'not-found') return located;
  if (located.kind === 'unreachable') return unreachable(located.install);
  const { install, store } = located;
  const replicas = opts.replicas ?? install.takenOver?.replicas ?? 1;
  const handedBack: string[] = [];
  for (const listed of await store.listStates()) {
    const marker = readOwnerMarker(listed);
    if (marker?.owner !== 'khrun' || marker.from !== installRef(install)) continue;
    const written = await updateKhStateWithRetry<boolean>(store, listed.metadata, {
      writer: 'handback',
      maxAttempts: 4,
      log: deps.log,
      initial: listed,
      decide: (state) => {
        const next = state && handedBackState(state, install, deps.clock.nowMs());
        return next ? write(next, () => true) : done(false);
      },
    });
    if (written) handedBack.push(ref(listed));
  }
  const mine = new Set(handedBack);
  const live = (states: KhState[]) =>
    liveRuns(
      states.filter((s) => mine.has(ref(s))),
      deps.clock.nowMs(),
    );
  const waitedFor = live(await store.listStates()).map((r) => r.check);
  if (waitedFor.length) {
    deps.log.info('waiting for khrun runs to finish', { checks: waitedFor });
    const latestDeadlineMs = Math.max(...live(await store.listStates()).map((r) => r.deadlineMs));
    await store
      .waitForStates((states) => (live(states).length === 0 ? true : undefined), {
        // Bounded by the runs' own deadlines: a run past its deadline is no longer live (liveRuns).
        timeoutMs: Math.max(1_000, latestDeadlineMs - deps.clock.nowMs() + 1_000),
        signal: opts.signal,
        description: `khrun's runs of ${waitedFor.join(', ')} to finish`,
      })
      .catch((error: unknown) => {
        if (opts.signal.aborted) throw error;
        // Past its deadline a run is over: its runner records nothing more; Kuberhealthy overwrites its uuid.
        deps.log.warn('runs still open at their deadline; handing back', { error: String(error) });
      });
  }
  await deps.kube.scale(install, replicas, null);
  deps.log.info('kuberhealthy scaled back up', { kuberhealthy: installRef(install), replicas });
  return { kind: 'handed-back', install, replicas, handedBack, waitedFor };
}
