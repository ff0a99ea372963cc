import type { V1Pod } from '@kubernetes/client-node';
import { CHECKER_POD_CHECK_ANNOTATION, KH_ENV } from '../check/pod-builder.ts';
import { sameUuid } from './accept-report.ts';

/** Where the report endpoint looks checker pods up; scoped to the namespaces it serves. */
export interface CallerLookup {
  podsByRunId(uuid: string): Promise<V1Pod[]>;
  /**
   * Pods (not finished) whose status.podIP is ip; the header-less clients' only identification. With
   * wait, looks again for a while: a pod may report before its IP is in its status.
   */
  livePodsByIp(ip: string, opts?: { wait: boolean }): Promise<V1Pod[]>;
}

export type Caller =
  /** pod: the reporting pod when it was looked up (undefined for a signed URL, which names only the run). */
  | { ok: true; namespace: string; checkName: string; uuid: string; pod: string | undefined }
  | { ok: false; reason: string };

const UUID_SHAPE = /^[0-9A-Za-z-]{1,63}$/;

/** The KH_RUN_UUID the pod was created with (the last one wins, as in v2). */
function podRunUuid(pod: V1Pod): string | undefined {
  let value: string | undefined;
  for (const c of pod.spec?.containers ?? []) {
    for (const e of c.env ?? []) if (e.name === KH_ENV.runUuid && e.value) value = e.value;
  }
  return value;
}

/** The check a checker pod belongs to: its check-name annotation, in its own namespace, and its run UUID. */
function fromPod(pod: V1Pod): Caller {
  const name = pod.metadata?.name ?? '';
  const checkName = pod.metadata?.annotations?.[CHECKER_POD_CHECK_ANNOTATION];
  if (!checkName)
    return {
      ok: false,
      reason: `pod ${name} has no ${CHECKER_POD_CHECK_ANNOTATION} annotation: it is not a checker pod`,
    };
  const uuid = podRunUuid(pod);
  if (!uuid)
    return { ok: false, reason: `pod ${name} has no ${KH_ENV.runUuid} env var: it is not a checker pod` };
  return { ok: true, namespace: pod.metadata?.namespace ?? '', checkName, uuid, pod: name };
}

/**
 * Identifies who is reporting as Kuberhealthy v2.5+ does: by the kh-run-uuid header when sent (the pod
 * carrying that run-id label), else by source IP (the live pod with that IP), because the npm and Python
 * clients and pre-2.5 Go images send no header.
 */
export async function identifyCaller(
  lookup: CallerLookup,
  headerUuid: string | undefined,
  sourceIp: string | undefined,
): Promise<Caller> {
  if (headerUuid) {
    if (!UUID_SHAPE.test(headerUuid))
      return { ok: false, reason: 'the kh-run-uuid header is not a run UUID' };
    const pods = await lookup.podsByRunId(headerUuid);
    if (pods.length > 0) return oneRun(pods, headerUuid);
    // v2 falls back to the source IP when the header names no pod.
  }
  if (!sourceIp) {
    return {
      ok: false,
      reason: headerUuid
        ? `no checker pod carries run UUID ${headerUuid} (a finished or unknown run)`
        : 'no kh-run-uuid header and no source address to identify the checker pod',
    };
  }
  // A client that sent the header is one whose pod carries the run-id label: when that names no pod, the
  // IP fallback (kept as v2 has it) gets one look and no wait, so forged or stale UUIDs are answered at once.
  const pods = await lookup.livePodsByIp(sourceIp, { wait: !headerUuid });
  if (pods.length === 0) {
    return {
      ok: false,
      reason: `no kh-run-uuid header, and no running checker pod has IP ${sourceIp}; send the header kh-run-uuid: $KH_RUN_UUID`,
    };
  }
  if (pods.length > 1)
    return { ok: false, reason: `${pods.length} pods have IP ${sourceIp}; send the kh-run-uuid header` };
  return fromPod(pods[0] as V1Pod);
}

/**
 * The run that the pods labelled with one run UUID belong to. After an adoption the run's replacement pod
 * and its older, terminating pod carry the same UUID: they are one run, not an ambiguity (the report of
 * either is the run's). Refused only when the pods disagree on the run (a forged label).
 */
function oneRun(pods: V1Pod[], headerUuid: string): Caller {
  const callers = pods.map(fromPod);
  const failed = callers.find((c) => !c.ok);
  if (failed) return failed;
  const runs = new Set(callers.map((c) => (c.ok ? `${c.namespace}/${c.checkName}/${c.uuid}` : '')));
  if (runs.size > 1) {
    return {
      ok: false,
      reason: `${pods.length} pods of different runs carry that run UUID; refusing to guess`,
    };
  }
  const caller = callers[0] as Caller & { ok: true };
  if (!sameUuid(caller.uuid, headerUuid)) {
    return { ok: false, reason: 'the kh-run-uuid header does not match the pod it names' };
  }
  // The pod named in the accepted report: the live one (not being deleted) when there is one.
  const live = pods.findIndex((p) => !p.metadata?.deletionTimestamp);
  return callers[Math.max(0, live)] ?? caller;
}

/** Socket addresses of IPv4 clients on a dual-stack listener come as ::ffff:a.b.c.d. */
export function normalizeIp(address: string | undefined): string | undefined {
  if (!address) return undefined;
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}
