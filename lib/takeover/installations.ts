import type { V1Container, V1Deployment } from '@kubernetes/client-node';

/** A Kuberhealthy found in the cluster: its Deployment, its line, and which checks it runs. */
export interface KuberhealthyInstall {
  namespace: string;
  name: string;
  /** v2 runs khchecks (and khjobs), v3 runs HealthChecks. */
  line: 'v2' | 'v3';
  /** spec.replicas: 0 once scaled down. */
  replicas: number;
  /** The pods' label selector (matchLabels), to wait for them to be gone. */
  selector: string;
  /**
   * The namespace whose checks it runs, or 'all'. v2.7.1 reads it from its config file (`namespace`,
   * blank by default: all), which the Deployment does not show: 'all' is assumed. v3.0.0 reads
   * KH_TARGET_NAMESPACE into its config and uses it nowhere (it runs every HealthCheck): 'all' too.
   */
  targets: string | 'all';
  /** The replica count `khrun takeover` scaled it down from, from the Deployment's annotation. */
  takenOver?: TakeoverRecord;
}

/** Kept on the Deployment while khrun runs its checks, so `khrun handback` restores the same count. */
export const TAKEOVER_ANNOTATION = 'khrun.dev/taken-over';

export interface TakeoverRecord {
  replicas: number;
  atMs: number;
}

function readRecord(d: V1Deployment): TakeoverRecord | undefined {
  const text = d.metadata?.annotations?.[TAKEOVER_ANNOTATION];
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    if (Number.isSafeInteger(v.replicas) && (v.replicas as number) >= 0 && typeof v.atMs === 'number')
      return { replicas: v.replicas as number, atMs: v.atMs };
  } catch {
    // A damaged record is absent: handback then needs --replicas.
  }
  return undefined;
}

const isKuberhealthyImage = (c: V1Container) => /(^|\/)kuberhealthy(:|@|$)/.test(c.image ?? '');

/**
 * The Kuberhealthy container of a Deployment, if it is one. Both lines' own manifests (v2.7.1's
 * deploy/kuberhealthy.yaml and Helm chart, v3.0.0's kustomize base and chart) label the pods
 * `app: kuberhealthy` and name the container `kuberhealthy`; the image `kuberhealthy/kuberhealthy` also
 * counts, so a renamed release is still found.
 */
function kuberhealthyContainer(d: V1Deployment): V1Container | undefined {
  const containers = d.spec?.template?.spec?.containers ?? [];
  const app = d.spec?.template?.metadata?.labels?.app;
  return (
    containers.find(isKuberhealthyImage) ??
    (app === 'kuberhealthy' ? containers.find((c) => c.name === 'kuberhealthy') : undefined)
  );
}

/**
 * v3 by its image tag (v3.x) or, when the tag says nothing (`main`, a digest, a local build), by the
 * environment only v3 reads (KH_LISTEN_ADDRESS, KH_TARGET_NAMESPACE, ... all KH_ prefixed; v2 reads
 * POD_NAME, POD_NAMESPACE, CHECK_REAPER_RUN_INTERVAL and a config file).
 */
function lineOf(c: V1Container): 'v2' | 'v3' {
  const tag = /:v?(\d+)\.[^/]*$/.exec(c.image ?? '')?.[1];
  if (tag === '2') return 'v2';
  if (tag === '3') return 'v3';
  const v3Only = (c.env ?? []).some((e) => /^KH_(?!EXTERNAL_REPORTING_URL$)/.test(e.name));
  return v3Only ? 'v3' : 'v2';
}

/** Every Kuberhealthy among the Deployments (pure): one list of Deployments is all it needs. */
export function findKuberhealthy(deployments: readonly V1Deployment[]): KuberhealthyInstall[] {
  const found: KuberhealthyInstall[] = [];
  for (const d of deployments) {
    const container = kuberhealthyContainer(d);
    if (!container) continue;
    const line = lineOf(container);
    const labels = d.spec?.selector?.matchLabels ?? {};
    const takenOver = readRecord(d);
    found.push({
      namespace: d.metadata?.namespace ?? '',
      name: d.metadata?.name ?? '',
      line,
      replicas: d.spec?.replicas ?? 1,
      selector: Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
      targets: 'all',
      ...(takenOver ? { takenOver } : {}),
    });
  }
  return found.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

export const installRef = (i: { namespace: string; name: string }) => `${i.namespace}/${i.name}`;
