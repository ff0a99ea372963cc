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
  | { ok: true; namespace: string; checkName: string; uuid: string; pod: string }
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
    if (pods.length === 1 && pods[0]) {
      const caller = fromPod(pods[0]);
      if (caller.ok && !sameUuid(caller.uuid, headerUuid)) {
        return { ok: false, reason: 'the kh-run-uuid header does not match the pod it names' };
      }
      return caller;
    }
    if (pods.length > 1)
      return { ok: false, reason: `${pods.length} pods carry that run UUID; refusing to guess` };
    // v2 falls back to the source IP when the header names no pod.
  }
  if (!sourceIp)
    return { ok: false, reason: 'no kh-run-uuid header and no source address to identify the checker pod' };
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

/** Socket addresses of IPv4 clients on a dual-stack listener come as ::ffff:a.b.c.d. */
export function normalizeIp(address: string | undefined): string | undefined {
  if (!address) return undefined;
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}
