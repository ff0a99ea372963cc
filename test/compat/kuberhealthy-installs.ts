import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { loadAll } from 'js-yaml';
import type { ManifestObject } from './v2-manifests.ts';

/**
 * What "installs beside a running Kuberhealthy" means for khrun's manifests, checked against Kuberhealthy's
 * own: no object of khrun's shares kind, namespace and name with one of theirs, so applying khrun neither
 * changes nor adopts anything of theirs (and removing khrun removes nothing of theirs). The CRDs are the
 * one exception by design: both work on the same kinds, so khrun's copies must be theirs exactly, and are
 * installed only where missing (Helm's crds/; `kubectl create -k infra/crds`).
 */

/** kind/namespace/name; cluster-scoped objects have an empty namespace. */
export function objectKey(o: ManifestObject): string {
  return `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;
}

/**
 * Every object of a multi-document YAML text (empty documents dropped), as plain data: js-yaml, not
 * client-node's loadAllYaml, which converts to its typed models and so changes what is compared.
 */
export function objectsOfYaml(text: string): ManifestObject[] {
  return (loadAll(text) as Array<ManifestObject | null>).filter(
    (o): o is ManifestObject => o !== null && typeof o === 'object' && typeof o.kind === 'string',
  );
}

/**
 * The resource files a kustomization (or component) at `dir` renders, following directories it lists to
 * their own kustomization.yaml, as kustomize does (its patches and generators are not read).
 */
export function kustomizationFiles(dir: string): string[] {
  const doc = loadAll(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'))[0] as {
    resources?: string[];
  };
  return (doc.resources ?? []).flatMap((entry) => {
    const path = join(dir, entry);
    return /\.ya?ml$/.test(entry) ? [path] : kustomizationFiles(path);
  });
}

/** An object of Kuberhealthy's install, and which manifest it comes from. */
export interface TheirObject {
  source: string;
  object: ManifestObject;
}

/**
 * The objects of Kuberhealthy's own installs, from the copies in test/fixtures/kuberhealthy (refresh.mjs):
 * v2.7.1's deploy/kuberhealthy.yaml (its flat-file install) and v3.0.0's deploy/kustomize/base (every file
 * its kustomization.yaml lists).
 */
export function kuberhealthyInstalls(fixtures: string): TheirObject[] {
  const v2 = 'v2.7.1/deploy/kuberhealthy.yaml';
  const v3 = join(fixtures, 'v3.0.0/deploy/kustomize/base');
  return [
    ...objectsOfYaml(readFileSync(join(fixtures, v2), 'utf8')).map((object) => ({ source: v2, object })),
    ...kustomizationFiles(v3).flatMap((file) =>
      objectsOfYaml(readFileSync(file, 'utf8')).map((object) => ({
        source: `v3.0.0/${join('deploy/kustomize/base', file.slice(v3.length + 1))}`,
        object,
      })),
    ),
  ];
}

/** One of khrun's objects with the key of one of Kuberhealthy's. */
export interface Collision {
  key: string;
  source: string;
  /** A CRD that is Kuberhealthy's, field for field: shared by design, installed only where missing. */
  identicalCrd: boolean;
}

/** khrun's objects that share kind/namespace/name with Kuberhealthy's, one entry per object of theirs (pure). */
export function collisions(ours: readonly ManifestObject[], theirs: readonly TheirObject[]): Collision[] {
  const byKey = new Map<string, TheirObject[]>();
  for (const t of theirs) byKey.set(objectKey(t.object), [...(byKey.get(objectKey(t.object)) ?? []), t]);
  return ours.flatMap((object) =>
    (byKey.get(objectKey(object)) ?? []).map((their) => ({
      key: objectKey(object),
      source: their.source,
      identicalCrd: object.kind === 'CustomResourceDefinition' && isDeepStrictEqual(object, their.object),
    })),
  );
}

/** The objects of the files of a kustomization directory (see kustomizationFiles). */
export function kustomizationObjects(dir: string): Array<{ file: string; object: ManifestObject }> {
  return kustomizationFiles(dir).flatMap((file) =>
    objectsOfYaml(readFileSync(file, 'utf8')).map((object) => ({ file, object })),
  );
}

export const fixturesDir = join(dirname(import.meta.dirname), 'fixtures/kuberhealthy');
