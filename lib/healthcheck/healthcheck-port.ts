import type { V1Pod } from '@kubernetes/client-node';
import { RUN_ID_LABEL } from '../check/pod-builder.ts';
import { NotFoundError } from '../core/not-found.ts';
import { WriteConflict } from '../kube/errors.ts';
import type { KubePort } from '../kube/port.ts';
import type { KhState } from '../state/resources.ts';
import type { HealthCheckApi } from './healthcheck-api.ts';
import { podViewOf, toV3Pod } from './pod-view.ts';
import { HC_POD, type HealthCheck } from './resources.ts';
import { isKhrunKey, khrunPartsOf, planHealthCheckWrite, stateViewOf } from './state-view.ts';
import { readHealthCheckStatus } from './status-view.ts';
import { runnableViewOf } from './validate.ts';

/** How often the second write of a transition is re-applied on a newer resourceVersion (see replaceState). */
const SECOND_WRITE_ATTEMPTS = 5;

export interface HealthCheckPort extends KubePort {
  readHealthCheck(namespace: string, name: string): Promise<HealthCheck | null>;
}

/**
 * KubePort over HealthChecks (api: healthcheck-api.ts), so lib/run runs them unchanged: the khcheck and the khstate it asks for are
 * views of one HealthCheck (validate.ts, state-view.ts), its checker pods are v3's pods seen in khrun's
 * contract (pod-view.ts). Every write carries the resourceVersion the view was read at.
 *
 * A transition can change status (the status subresource) and annotations (the main resource): two PUTs,
 * each with the resourceVersion as precondition, the second on the version the first returned. Why a
 * transition half applied is still safe:
 * - The run lock is status.currentUUID alone (state-view.ts), so a claim is the status write of currentUUID
 *   and comes first; of two claims on one version only one gets past the precondition. If the lease
 *   annotation then never lands (the runner died), the run reads as FOREIGN_RUNNER's until its deadline:
 *   nobody adopts it, no pod was created for it, and it is closed as timed out after its deadline.
 * - A recording clears currentUUID in the same status write that carries the result, also first: v3's
 *   readers see the result, the run is closed (a khrun.dev/run annotation without the currentUUID counts for
 *   nothing), and the history entry follows in the second write.
 * - Everything else (lease, adoption, release, report, dispatch) leaves currentUUID alone: annotations
 *   first, so the status (result) follows the bookkeeping, never the other way round.
 * The second write meets a 409 when anything changed the HealthCheck in between, also a spec or label edit
 * by its owner; it is re-applied on the new version only while status and khrun.dev annotations are still
 * as the first write left them (khrunPartsOf), else WriteConflict: the caller's compare-and-swap loop
 * reads again and decides on what is there.
 */
export function healthCheckPort(api: HealthCheckApi): HealthCheckPort {
  /** The last version seen of each check: a write's base without another GET. */
  const seen = new Map<string, HealthCheck>();
  const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;
  const remember = (hc: HealthCheck) => {
    seen.set(keyOf(hc.metadata.namespace, hc.metadata.name), hc);
    return hc;
  };

  async function readHealthCheck(namespace: string, name: string): Promise<HealthCheck | null> {
    const hc = await api.get(namespace, name);
    return hc && remember(hc);
  }

  /** The HealthCheck the view was made from; a view older than the check is a conflict at once. */
  async function baseOf(view: KhState): Promise<HealthCheck> {
    const { namespace, name, resourceVersion } = view.metadata;
    const cached = seen.get(keyOf(namespace, name));
    if (cached && cached.metadata.resourceVersion === resourceVersion) return cached;
    const fresh = await readHealthCheck(namespace, name);
    if (!fresh || fresh.metadata.resourceVersion !== resourceVersion) throw new WriteConflict('Conflict');
    return fresh;
  }

  /** The second write, re-applied on newer versions while khrun's parts are as the first write left them. */
  async function secondWrite(first: HealthCheck, apply: (base: HealthCheck) => Promise<HealthCheck>) {
    let base = first;
    for (let attempt = 1; ; attempt++) {
      try {
        return await apply(base);
      } catch (error) {
        if (!(error instanceof WriteConflict) || attempt >= SECOND_WRITE_ATTEMPTS) throw error;
        const fresh = await readHealthCheck(first.metadata.namespace, first.metadata.name);
        if (!fresh || khrunPartsOf(fresh) !== khrunPartsOf(first)) throw error;
        base = fresh;
      }
    }
  }

  return {
    readHealthCheck,
    async readCheck(namespace, name) {
      const hc = await readHealthCheck(namespace, name);
      return hc && runnableViewOf(hc);
    },
    async readState(namespace, name) {
      const hc = await readHealthCheck(namespace, name);
      return hc && stateViewOf(hc);
    },
    createState(state) {
      // The state is the HealthCheck: there is none to create when the check itself is gone.
      const { namespace, name } = state.metadata;
      return Promise.reject(
        new NotFoundError({ resource: 'HealthCheck', namespace, name }, goneMessage(namespace, name)),
      );
    },
    async replaceState(view, writer) {
      const base = await baseOf(view);
      const plan = planHealthCheckWrite(base, view);
      const { status, annotations } = plan;
      const writes: Array<(hc: HealthCheck) => Promise<HealthCheck>> = [];
      if (status) writes.push(async (hc) => remember(await api.replaceStatus({ ...hc, status }, writer)));
      if (annotations) {
        // khrun's annotations from the plan, everyone else's as they are now: a person's annotation (a
        // silence, khrun silence) written between the two writes is kept, never put back as it was.
        const withAnnotations = (hc: HealthCheck) => ({
          ...hc,
          metadata: { ...hc.metadata, annotations: withKhrunKeys(hc.metadata.annotations, annotations) },
        });
        writes.push(async (hc) => remember(await api.replace(withAnnotations(hc), writer)));
      }
      if (!plan.statusFirst) writes.reverse();
      const [firstWrite, secondWriteOf] = writes;
      if (!firstWrite) return stateViewOf(base);
      const first = await firstWrite(base);
      return stateViewOf(secondWriteOf ? await secondWrite(first, secondWriteOf) : first);
    },
    deleteState() {
      // Deleting a HealthCheck's state would delete the check: lib/run asks only once the check is gone,
      // and its status went with it.
      return Promise.resolve();
    },
    async listCheckPods(namespace, checkName) {
      return (await api.listPods(namespace, `${HC_POD.checkLabel}=${checkName}`)).map(podViewOf);
    },
    async listCheckPodsAt(namespace, checkName) {
      // No resourceVersion: watchRun (which ignores podsFrom here) lists v3's pods for itself.
      const pods = await api.listPods(namespace, `${HC_POD.checkLabel}=${checkName}`);
      return { pods: pods.map(podViewOf), resourceVersion: undefined };
    },
    async createPod(pod) {
      const { namespace = '', labels = {} } = pod.metadata ?? {};
      const name = labels[RUN_ID_LABEL] ? (pod.metadata?.ownerReferences?.[0]?.name ?? '') : '';
      const hc = seen.get(keyOf(namespace, name)) ?? (await readHealthCheck(namespace, name));
      if (!hc)
        throw new NotFoundError({ resource: 'HealthCheck', namespace, name }, goneMessage(namespace, name));
      // The claim wrote the run's start as lastRunUnix; v3's createdTime annotation is that start.
      const startUnix = readHealthCheckStatus(hc).lastRunUnix;
      return podViewOf(await api.createPod(toV3Pod(pod, hc, startUnix)));
    },
    removePod: (namespace, name, uid) => api.removePod(namespace, name, uid),
    async watchRun({ namespace, checkName, runUuid, signal, onChange, onInterruption }) {
      let runPods: V1Pod[] = [];
      let state: KhState | null = null;
      let podsReady = false;
      let stateReady = false;
      const emit = () => {
        if (podsReady && stateReady) onChange({ pods: runPods, state });
      };
      await Promise.all([
        api.watchPods({
          namespace,
          labelSelector: `${HC_POD.runUuidLabel}=${runUuid}`,
          signal,
          onInterruption,
          onChange: (pods) => {
            runPods = pods.map(podViewOf);
            podsReady = true;
            emit();
          },
        }),
        api.watchCheck({
          namespace,
          name: checkName,
          signal,
          onInterruption,
          onChange: (hc) => {
            state = hc ? stateViewOf(remember(hc)) : null;
            stateReady = true;
            emit();
          },
        }),
      ]);
    },
  };
}

const goneMessage = (namespace: string, name: string) => `HealthCheck ${namespace}/${name} no longer exists`;

/** others with every khrun.dev/ key taken from khrun (and none of others' kept). */
function withKhrunKeys(others: Record<string, string> | undefined, khrun: Record<string, string>) {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(others ?? {})) if (!isKhrunKey(k)) out[k] = v;
  for (const [k, v] of Object.entries(khrun)) if (isKhrunKey(k)) out[k] = v;
  return out;
}
