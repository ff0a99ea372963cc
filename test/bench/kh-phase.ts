import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { HC_GROUP, HC_PLURAL, HC_VERSION } from '../../lib/healthcheck/resources.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL } from '../../lib/state/resources.ts';
import { dropNamespace, freshNamespace } from '../integration/helpers/cluster.ts';
import { applyObjects } from '../integration/helpers/kuberhealthy-v2.ts';
import {
  CHECK_KINDS,
  type CheckKind,
  type CheckTimes,
  checkName,
  checkObjects,
  INSTANT_KINDS,
} from './kh-checks.ts';
import { type RunRecord, type RunWatch, watchRuns } from './kh-run-watch.ts';

/** The checks of one actor: a namespace per kind, their objects applied, their runs watched. */
export interface CheckSet {
  record: RunRecord;
  namespaces: Record<CheckKind, string>;
  watch: RunWatch;
  /** Runs with an outcome, per kind. */
  done(kind: CheckKind): number;
  /** Leaves only the instant checks, with runInterval 1h: no check due (for the figure at rest). */
  quiesce(): Promise<void>;
  /** Deletes the namespaces (their checks first) and stops watching. */
  drop(): Promise<void>;
}

/** Creates a namespace per kind (prefix-kind-xxxxxx) and applies each kind's objects as khchecks or HealthChecks. */
export async function createCheckSet(opts: {
  kc: KubeConfig;
  prefix: string;
  record: RunRecord;
  moduleDir: string;
  times: CheckTimes;
}): Promise<CheckSet> {
  const { kc, record } = opts;
  const namespaces = {} as Record<CheckKind, string>;
  for (const kind of CHECK_KINDS) namespaces[kind] = await freshNamespace(kc, `${opts.prefix}-${kind}`);
  const watch = watchRuns(kc, record, Object.values(namespaces));
  for (const kind of CHECK_KINDS) {
    const as = record === 'khstate' ? 'khcheck' : 'healthcheck';
    const objects = await checkObjects({
      moduleDir: opts.moduleDir,
      kind,
      namespace: namespaces[kind],
      times: opts.times,
      as,
    });
    await applyObjects(objects, `bench-${namespaces[kind]}`);
  }
  const custom = kc.makeApiClient(CustomObjectsApi);
  const co =
    record === 'khstate'
      ? { group: KH_GROUP, version: KH_VERSION, plural: KHCHECK_PLURAL }
      : { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
  const deleteCheck = (kind: CheckKind) =>
    custom
      .deleteNamespacedCustomObject({ ...co, namespace: namespaces[kind], name: checkName(kind) })
      .catch(() => undefined);
  return {
    record,
    namespaces,
    watch,
    done: (kind) => watch.runs(namespaces[kind]).filter((r) => r.outcomeSeenMs !== undefined).length,
    async quiesce() {
      for (const kind of CHECK_KINDS) if (!INSTANT_KINDS.includes(kind)) await deleteCheck(kind);
      for (const kind of INSTANT_KINDS)
        await custom.patchNamespacedCustomObject(
          {
            ...co,
            namespace: namespaces[kind],
            name: checkName(kind),
            body: [{ op: 'replace', path: '/spec/runInterval', value: '1h' }],
          },
          setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
        );
    },
    async drop() {
      watch.stop();
      for (const kind of CHECK_KINDS) await deleteCheck(kind);
      for (const ns of Object.values(namespaces)) await dropNamespace(kc, ns);
    },
  };
}
