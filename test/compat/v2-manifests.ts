import { loadAllYaml } from '@kubernetes/client-node';

/** A parsed Kubernetes object of a manifest, as loose as YAML gives it. */
export interface ManifestObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** The namespace Kuberhealthy v2.7.1's YAMLs put everything in. */
export const V2_NAMESPACE = 'kuberhealthy';

/** What was changed in a manifest, said in docs/compatibility.md and the compat table. */
export interface Rewrite {
  object: string;
  change: string;
}

const label = (o: ManifestObject) => `${o.kind}/${o.metadata?.name}`;

/**
 * The objects of a Kuberhealthy v2 YAML moved to another namespace, and nothing else changed (pure): each
 * `metadata.namespace` and each binding subject's namespace that says `kuberhealthy`, and an env var
 * POD_NAMESPACE whose literal value is `kuberhealthy` (daemonset-check's YAML names its namespace that way,
 * where the others use the downward API). Returns the objects and the list of changes made.
 */
export function inNamespace(
  text: string,
  namespace: string,
): { objects: ManifestObject[]; rewrites: Rewrite[] } {
  const rewrites: Rewrite[] = [];
  const objects = (loadAllYaml(text) as Array<ManifestObject | null>).filter(
    (o): o is ManifestObject => o !== null && typeof o === 'object',
  );
  for (const o of objects) {
    if (o.metadata?.namespace === V2_NAMESPACE && namespace !== V2_NAMESPACE)
      o.metadata.namespace = namespace;
    for (const s of (o.subjects as Array<{ namespace?: string }> | undefined) ?? [])
      if (s.namespace === V2_NAMESPACE) s.namespace = namespace;
    for (const env of envVars(o))
      if (env.name === 'POD_NAMESPACE' && env.value === V2_NAMESPACE) {
        env.value = namespace;
        rewrites.push({
          object: label(o),
          change: `env POD_NAMESPACE: "${V2_NAMESPACE}" → the test namespace`,
        });
      }
  }
  return { objects, rewrites };
}

/** Every `env` entry of every container of an object, wherever its pod spec sits. */
function envVars(doc: unknown): Array<{ name?: string; value?: string }> {
  if (Array.isArray(doc)) return doc.flatMap(envVars);
  if (typeof doc !== 'object' || doc === null) return [];
  const record = doc as Record<string, unknown>;
  const own = Array.isArray(record.env) ? (record.env as Array<{ name?: string; value?: string }>) : [];
  return [...own, ...Object.values(record).flatMap(envVars)];
}

/**
 * The daemon's part of deploy/kuberhealthy.yaml, as the harness applies it (pure). Left out, and why:
 * the CRDs (khchecks and khstates are khrun's, installed from infra/crds; khjobs is applied on its own when
 * the cluster has none), the PodDisruptionBudget (`policy/v1beta1`, which Kubernetes stopped serving in
 * 1.25), and the three khchecks the file ships (daemonset, deployment, dns-status-internal: a test applies
 * the checks it compares). Added to the Deployment's container: POD_IP and KH_EXTERNAL_REPORTING_URL, as the
 * local cluster routes no Service ClusterIP: checker pods report to the daemon pod's own address.
 */
export function daemonObjects(
  deployYaml: string,
  namespace: string,
): { objects: ManifestObject[]; rewrites: Rewrite[] } {
  const { objects, rewrites } = inNamespace(deployYaml, namespace);
  const skipped = new Set(['CustomResourceDefinition', 'PodDisruptionBudget', 'KuberhealthyCheck']);
  const kept = objects.filter((o) => !skipped.has(o.kind ?? ''));
  for (const o of objects)
    if (skipped.has(o.kind ?? '') && o.kind !== 'CustomResourceDefinition')
      rewrites.push({ object: label(o), change: 'not applied' });
  const deployment = kept.find((o) => o.kind === 'Deployment');
  const container = (
    deployment?.spec as { template?: { spec?: { containers?: Array<{ env?: unknown[] }> } } }
  )?.template?.spec?.containers?.[0];
  if (!deployment || !container)
    throw new Error('deploy/kuberhealthy.yaml has no Deployment with a container');
  container.env = [
    ...(container.env ?? []),
    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    { name: 'KH_EXTERNAL_REPORTING_URL', value: 'http://$(POD_IP):8080/externalCheckStatus' },
  ];
  rewrites.push({
    object: label(deployment),
    change: 'env POD_IP and KH_EXTERNAL_REPORTING_URL=http://$(POD_IP):8080/externalCheckStatus added',
  });
  return { objects: kept, rewrites };
}

/** The khjobs CRD of deploy/kuberhealthy.yaml (pure). */
export function khjobsCrd(deployYaml: string): ManifestObject {
  const crd = inNamespace(deployYaml, V2_NAMESPACE).objects.find(
    (o) => o.kind === 'CustomResourceDefinition' && o.metadata?.name === 'khjobs.comcast.github.io',
  );
  if (!crd) throw new Error('deploy/kuberhealthy.yaml has no khjobs CRD');
  return crd;
}
