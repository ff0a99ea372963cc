import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { parseGoDuration } from '../../lib/core/duration.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION } from '../../lib/healthcheck/resources.ts';
import { KH_GROUP, KH_VERSION, KHCHECK_PLURAL } from '../../lib/state/resources.ts';
import { dropNamespace, freshNamespace } from '../integration/helpers/cluster.ts';
import { applyObjects } from '../integration/helpers/kuberhealthy-v2.ts';
import { CHECK_KINDS, type CheckKind, type CheckTimes, checkName, checkObjects } from './kh-checks.ts';
import { type RunRecord, type RunWatch, watchRuns } from './kh-run-watch.ts';
import { openToCheckerCredentials } from './scale-setup.ts';

/** The checks of one actor: a namespace per kind, their objects applied, their runs watched. */
export interface CheckSet {
  record: RunRecord;
  namespaces: Record<CheckKind, string>;
  /** Each check's spec.timeout. */
  timeoutMs: Record<CheckKind, number>;
  watch: RunWatch;
  /** Runs with an outcome, per kind. */
  done(kind: CheckKind): number;
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
  const timeoutMs = {} as Record<CheckKind, number>;
  for (const kind of CHECK_KINDS) {
    namespaces[kind] = await freshNamespace(kc, `${opts.prefix}-${kind}`);
    await openToCheckerCredentials(kc, namespaces[kind]);
  }
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
    const check = objects.find((o) => o.kind === 'KuberhealthyCheck' || o.kind === 'HealthCheck');
    const timeout = parseGoDuration(String((check?.spec as { timeout?: string })?.timeout ?? ''));
    if (!timeout.ok) throw new Error(`${kind}: the check's timeout does not parse: ${timeout.error}`);
    timeoutMs[kind] = timeout.ns / 1e6;
    await applyObjects(objects, `bench-${namespaces[kind]}`);
  }
  const custom = kc.makeApiClient(CustomObjectsApi);
  const co =
    record === 'khstate'
      ? { group: KH_GROUP, version: KH_VERSION, plural: KHCHECK_PLURAL }
      : { group: HC_GROUP, version: HC_VERSION, plural: HC_PLURAL };
  return {
    record,
    namespaces,
    timeoutMs,
    watch,
    done: (kind) => watch.runs(namespaces[kind]).filter((r) => r.outcomeSeenMs !== undefined).length,
    async drop() {
      watch.stop();
      for (const kind of CHECK_KINDS)
        await custom
          .deleteNamespacedCustomObject({ ...co, namespace: namespaces[kind], name: checkName(kind) })
          .catch(() => undefined);
      for (const ns of Object.values(namespaces)) await dropNamespace(kc, ns);
    },
  };
}
