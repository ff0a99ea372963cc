import type { KubePort, StateWriteIntent } from '../kube/port.ts';
import { readActiveRun } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';
import { asJobPod, asJobState, startsSecondRun } from './job-writes.ts';
import { jobAsCheck, jobRunUuid, type KhJob } from './khjob.ts';

/**
 * A write of the run engine that would start a second run of a khjob, refused before it reached the API
 * server. The runner reads the khjob and its khstate again and decides anew (lib/job/run-khjob.ts).
 */
export class SecondJobRunRefused extends Error {
  override readonly name = 'SecondJobRunRefused';
  constructor(readonly target: string) {
    super(`khjob ${target} already ran; a second run was refused`);
  }
}

/**
 * The run engine's KubePort for one khjob: the engine runs it as it runs a khcheck (claim, adopt, lease,
 * report, record), through this adapter, which
 * - reads the khjob where the engine reads a khcheck, as the khcheck it would be (jobAsCheck);
 * - makes the checker pod the khjob's (owner, workload label);
 * - labels every khstate write as a khjob's and words its errors as v2 does for khjobs;
 * - refuses a khstate write that would start the khjob's run a second time: the run is named by the khjob
 *   (its uid), so this check sits on the compare-and-swap write itself and no race can slip past it;
 * - calls afterClaim once a write whose intent is 'claim' (the writer is only the audit label) holding the
 *   khjob's run landed (the phase moves to Running then, so a run refused or found busy never marks the
 *   khjob).
 */
export function jobKubePort(
  base: KubePort,
  job: KhJob,
  readJob: (namespace: string, name: string) => Promise<KhJob | null>,
  afterClaim: () => Promise<void> = async () => {},
): KubePort {
  const runUuid = jobRunUuid(job);
  const target = `${job.metadata.namespace}/${job.metadata.name}`;
  const guarded = (state: KhState): KhState => {
    if (startsSecondRun(state, runUuid)) throw new SecondJobRunRefused(target);
    return asJobState(state);
  };
  const claimed = async (written: KhState, intent: StateWriteIntent | undefined) => {
    if (intent === 'claim' && readActiveRun(written)?.uuid === runUuid) await afterClaim();
    return written;
  };
  // Delegation by name, not by spread: a port may be a class instance whose methods are not own properties.
  return {
    readState: (namespace, name) => base.readState(namespace, name),
    deleteState: (namespace, name, resourceVersion) => base.deleteState(namespace, name, resourceVersion),
    listCheckPods: (namespace, checkName) => base.listCheckPods(namespace, checkName),
    listCheckPodsAt: (namespace, checkName) => base.listCheckPodsAt(namespace, checkName),
    removePod: (namespace, name, uid) => base.removePod(namespace, name, uid),
    watchRun: (opts) => base.watchRun(opts),
    readCheck: async (namespace, name) => {
      const current = await readJob(namespace, name);
      // Deleted, or deleted and applied again (a new run of its own): this run's khjob is gone.
      return current && current.metadata.uid === job.metadata.uid ? jobAsCheck(current) : null;
    },
    createState: async (state, writer, intent) =>
      claimed(await base.createState(guarded(state), writer, intent), intent),
    replaceState: async (state, writer, intent) =>
      claimed(await base.replaceState(guarded(state), writer, intent), intent),
    createPod: (pod) => base.createPod(asJobPod(pod, job)),
  };
}
