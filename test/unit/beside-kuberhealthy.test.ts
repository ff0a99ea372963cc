import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  collisions,
  fixturesDir,
  kuberhealthyInstalls,
  kustomizationObjects,
  objectKey,
} from '../compat/kuberhealthy-installs.ts';
import type { ManifestObject } from '../compat/v2-manifests.ts';

// khrun installs beside a running Kuberhealthy: none of the objects its kustomization renders (infra/deploy,
// each component, the CRDs of infra/crds; its resource files are the chart's templates rendered, so the
// chart is covered with those values) has the kind, namespace and name of an object of Kuberhealthy
// v2.7.1's deploy/kuberhealthy.yaml or v3.0.0's deploy/kustomize/base. The CRDs alone are shared, and
// must be Kuberhealthy's exactly. test/integration/helm.test.ts checks `helm template` with every option the
// same way, and test/integration/beside-kuberhealthy.test.ts applies both to a cluster.

const root = join(import.meta.dirname, '../..');
const theirs = kuberhealthyInstalls(fixturesDir);
const dirs = [
  'infra/deploy',
  'infra/deploy/components/serve',
  'infra/deploy/components/sync',
  'infra/deploy/components/monitoring',
  'infra/deploy/components/examples',
  'infra/parameter-keeper',
  'infra/crds',
];
const ours = dirs.flatMap((dir) => kustomizationObjects(join(root, dir)).map((o) => o.object));

describe("khrun's manifests beside Kuberhealthy's", () => {
  it("read Kuberhealthy's installs whole: v2.7.1's flat file and v3.0.0's kustomize base", () => {
    const keys = theirs.map((t) => objectKey(t.object));
    // v2.7.1: three CRDs, the daemon and its RBAC, three default checks; no Namespace object.
    expect(keys).toEqual(
      expect.arrayContaining([
        'CustomResourceDefinition//khchecks.comcast.github.io',
        'Deployment/kuberhealthy/kuberhealthy',
        'Service/kuberhealthy/kuberhealthy',
        'ServiceAccount/kuberhealthy/kuberhealthy',
        'ConfigMap/kuberhealthy/kuberhealthy',
        'ClusterRole//kuberhealthy',
        'PodDisruptionBudget/kuberhealthy/kuberhealthy-pdb',
        // v3.0.0's base: its Namespace, controller, RBAC, PDB, CRD and example.
        'Namespace//kuberhealthy',
        'ClusterRole//kuberhealthy-manager',
        'PodDisruptionBudget/kuberhealthy/kuberhealthy',
        'CustomResourceDefinition//healthchecks.kuberhealthy.github.io',
        'HealthCheck/kuberhealthy/example-check',
      ]),
    );
    expect(ours.length).toBeGreaterThan(40);
  });

  it('share no kind/namespace/name with them but the CRDs, which are theirs exactly', () => {
    const found = collisions(ours, theirs);
    expect(found.filter((c) => !c.identicalCrd)).toEqual([]);
    expect(found.map((c) => c.key).sort()).toEqual([
      'CustomResourceDefinition//healthchecks.kuberhealthy.github.io',
      'CustomResourceDefinition//khchecks.comcast.github.io',
      'CustomResourceDefinition//khjobs.comcast.github.io',
      'CustomResourceDefinition//khstates.comcast.github.io',
    ]);
  });

  it('nor would they in the namespace kuberhealthy (a Helm install there): every name is khrun-*', () => {
    const moved: ManifestObject[] = ours.map((o) =>
      o.metadata?.namespace ? { ...o, metadata: { ...o.metadata, namespace: 'kuberhealthy' } } : o,
    );
    expect(collisions(moved, theirs).filter((c) => !c.identicalCrd)).toEqual([]);
    const named = ours.filter((o) => o.kind !== 'CustomResourceDefinition' && o.kind !== 'KuberhealthyCheck');
    expect(named.filter((o) => !o.metadata?.name?.startsWith('khrun')).map(objectKey)).toEqual([]);
  });

  it("catches a clash: the server's old names, Kuberhealthy v2's Deployment and Service", () => {
    const old = (kind: string): ManifestObject => ({
      kind,
      metadata: { name: 'kuberhealthy', namespace: 'kuberhealthy' },
    });
    const clash = (key: string, source: string) => ({ key, source, identicalCrd: false });
    expect(collisions([old('Deployment'), old('Service')], theirs)).toEqual([
      clash('Deployment/kuberhealthy/kuberhealthy', 'v2.7.1/deploy/kuberhealthy.yaml'),
      clash('Deployment/kuberhealthy/kuberhealthy', 'v3.0.0/deploy/kustomize/base/deployment.yaml'),
      clash('Service/kuberhealthy/kuberhealthy', 'v2.7.1/deploy/kuberhealthy.yaml'),
      clash('Service/kuberhealthy/kuberhealthy', 'v3.0.0/deploy/kustomize/base/service.yaml'),
    ]);
    // A CRD that differs from theirs is a clash too.
    const crd = theirs.find((t) => t.object.kind === 'CustomResourceDefinition')!.object;
    const changed = { ...crd, metadata: { ...crd.metadata, labels: { mine: 'yes' } } };
    expect(collisions([changed], theirs)[0]?.identicalCrd).toBe(false);
  });
});
