import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CustomObjectsApi, type KubernetesObject, type V1Namespace } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../../lib/state/resources.ts';
import { inNamespace, type ManifestObject } from '../../compat/v2-manifests.ts';
import {
  type Compared,
  type CompatRow,
  compareOutcomes,
  type Outcome,
  writeCompatResults,
} from '../../compat/v2-results.ts';
import { adminKubeConfig, dropNamespace, freshNamespace, waitFor } from '../helpers/cluster.ts';
import { kubectl } from '../helpers/deploy.ts';
import { runKhrun } from '../helpers/khrun.ts';
import {
  applyObjects,
  type KuberhealthyV2Daemon,
  kuberhealthyV2Source,
  startKuberhealthyV2,
} from '../helpers/kuberhealthy-v2.ts';

// Kuberhealthy v2.7.1's own check programs, from their own YAMLs in the module, run once by khrun
// (`khrun run --check`) in one namespace and once by the real v2.7.1 daemon (its deploy/kuberhealthy.yaml
// Deployment) in another; the khstates both write are compared check by check, and written to
// bench/compat-v2.json for the docs/compatibility.md table (test/compat/table.ts).

interface Case {
  /** The row's name in the table. */
  id: string;
  /** The YAML in the module, and the khcheck of it this case runs (other objects of the file: its RBAC). */
  yaml: string;
  check: string;
  /** Other khchecks in the same file, left out (the file is a set of examples). */
  onlyThisCheck?: boolean;
  /** A change to the YAML, said in the table. */
  edit?: { say: string; apply: (objects: ManifestObject[]) => void };
  /**
   * Objects of deploy/kuberhealthy.yaml (kind/name) the check's YAML relies on without holding them: its
   * RBAC there is the chart's, and the cmd/ YAML alone lacks it (found by running them: `nodes is forbidden`).
   */
  needs?: string[];
  /** A difference found and explained (the table says it): the row must show exactly this, or the test fails. */
  difference?: { explain: string; holds: (c: Compared) => boolean };
}

/** Both not OK, each with one error of this check's execution-error form that `says` matches. */
const bothTimedOut =
  (check: string, v2Says: RegExp, khrunSays: RegExp) =>
  ({ kuberhealthy: v2, khrun }: Compared): boolean => {
    const prefix = `Check execution error: <namespace>/${check}: `;
    const one = (o: Outcome, says: RegExp) =>
      !('missing' in o) &&
      !o.ok &&
      o.errors.length === 1 &&
      o.errors[0]!.startsWith(prefix) &&
      says.test(o.errors[0]!);
    return one(v2, v2Says) && one(khrun, khrunSays);
  };

const setEnv = (name: string, value: string, rename: string) => (objects: ManifestObject[]) => {
  for (const o of objects) {
    if (o.kind !== 'KuberhealthyCheck' || !o.metadata) continue;
    o.metadata.name = rename;
    const containers = (
      o.spec as { podSpec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> } }
    ).podSpec.containers;
    for (const env of containers[0]?.env ?? []) if (env.name === name) env.value = value;
  }
};

const CASES: Case[] = [
  { id: 'test-check', yaml: 'cmd/test-check/khcheck.yaml', check: 'kh-test-check' },
  {
    id: 'test-check, reports a failure',
    yaml: 'cmd/test-check/khcheck.yaml',
    check: 'kh-test-check-failure',
    edit: {
      say: 'env REPORT_FAILURE "false" → "true", name kh-test-check → kh-test-check-failure',
      apply: setEnv('REPORT_FAILURE', 'true', 'kh-test-check-failure'),
    },
  },
  {
    id: 'test-check, 1 s timeout',
    yaml: 'cmd/test-check/test-check-set.yaml',
    check: 'kh-test-fail-short-timeout',
    onlyThisCheck: true,
    difference: {
      explain:
        'both record a timed-out run: not OK, one execution error; the words differ. v2 first waits for ' +
        'earlier checker pods to go (at least 5 s), so a 1 s timeout always strikes there and it says so; ' +
        'khrun says what it last saw of the pod',
      holds: bothTimedOut(
        'kh-test-fail-short-timeout',
        /: failed to see pod cleanup within timeout$/,
        /: timed out waiting for checker pod to report in \(/,
      ),
    },
  },
  { id: 'pod-status-check', yaml: 'cmd/pod-status-check/pod-status-check.yaml', check: 'pod-status' },
  { id: 'pod-restarts-check', yaml: 'cmd/pod-restarts-check/pod-restarts-check.yaml', check: 'pod-restarts' },
  {
    id: 'namespace-pod-check',
    yaml: 'cmd/namespace-pod-check/namespace-pod-check.yaml',
    check: 'namespace-pod-check',
    needs: ['ClusterRole/kuberhealthy'],
  },
  {
    id: 'resource-quota-check',
    yaml: 'cmd/resource-quota-check/resource-quota.yaml',
    check: 'resource-quota',
  },
  {
    id: 'daemonset-check',
    yaml: 'cmd/daemonset-check/daemonset-check.yaml',
    check: 'daemonset',
    needs: [
      'ClusterRole/kuberhealthy-daemonset-khcheck',
      'ClusterRoleBinding/kuberhealthy-daemonset-khcheck',
    ],
  },
];

const kc = adminKubeConfig();
const co = kc.makeApiClient(CustomObjectsApi);
let moduleDir: string;
let deployYaml: string;
let nsKhrun: string;
let nsV2: string;
let daemon: KuberhealthyV2Daemon | undefined;
const rewrites = new Map<string, string[]>();

/** The case's objects, moved into `namespace`; the edits said, for the table. */
async function applyCase(c: Case, namespace: string): Promise<void> {
  const { objects, rewrites: moved } = inNamespace(
    await readFile(join(moduleDir, c.yaml), 'utf8'),
    namespace,
  );
  const kept = objects.filter(
    (o) => o.kind !== 'KuberhealthyCheck' || !c.onlyThisCheck || o.metadata?.name === c.check,
  );
  c.edit?.apply(kept);
  const needed = inNamespace(deployYaml, namespace).objects.filter((o) =>
    c.needs?.includes(`${o.kind}/${o.metadata?.name}`),
  );
  kept.push(...needed);
  await applyObjects(kept, `${namespace}-${c.check}`);
  const said = [
    ...moved.map((r) => r.change),
    ...(c.edit ? [c.edit.say] : []),
    ...(c.onlyThisCheck ? ['only this khcheck of the file'] : []),
    ...(c.needs ?? []).map((n) => `with ${n} of deploy/kuberhealthy.yaml`),
  ];
  rewrites.set(c.id, said);
}

const outcomeOf = (state: KhState | undefined): Outcome =>
  state ? { ok: state.spec.OK === true, errors: [...(state.spec.Errors ?? [])] } : { missing: true };

const khrunOutcomes = new Map<string, Outcome>();
const v2Outcomes = new Map<string, Outcome>();

beforeAll(async () => {
  ({ moduleDir } = await kuberhealthyV2Source());
  deployYaml = await readFile(join(moduleDir, 'deploy/kuberhealthy.yaml'), 'utf8');
  nsKhrun = await freshNamespace(kc, 'v2k');
  // The one step docs/security.md gives for moving Kuberhealthy's checks (they run as ServiceAccounts of
  // their own) under khrun's admission policies, taken as a user would. This test runs khrun with the admin's
  // credentials, which the policies do not hold; admission-credentials.test.ts proves the step as the runner.
  await kubectl(['label', 'namespace', nsKhrun, 'khrun.dev/checker-credentials=allowed']);
  nsV2 = await freshNamespace(kc, 'v2d');
  // namespace-pod-check creates a pod in every namespace: one an earlier file is still deleting refuses it,
  // and whichever peer ran first would fail for the test's sake. Both start once none is terminating.
  await waitFor<V1Namespace, true>(kc, {
    path: '/api/v1/namespaces',
    decide: (items) =>
      [...items.values()].every((n) => n.status?.phase !== 'Terminating') ? true : undefined,
    timeoutMs: 120_000,
    description: 'no namespace terminating',
  });
}, 180_000);

afterAll(async () => {
  await daemon?.stop();
  await dropNamespace(kc, nsKhrun);
  await dropNamespace(kc, nsV2);
}, 180_000);

describe("Kuberhealthy v2.7.1's own checks: khrun and the v2.7.1 daemon record the same", () => {
  it('khrun runs each from its own YAML (khrun run --check, all at once, as one tick would)', async () => {
    for (const c of CASES) await applyCase(c, nsKhrun);
    await Promise.all(
      CASES.map(async (c) => {
        const result = await runKhrun(['--check', c.check, '--namespace', nsKhrun, '--output', 'json']);
        console.log(`[khrun] ${c.check}: exit ${result.code} ${result.stdout.trim().split('\n').pop()}`);
        const state = (await co
          .getNamespacedCustomObject({
            group: KH_GROUP,
            version: KH_VERSION,
            plural: KHSTATE_PLURAL,
            namespace: nsKhrun,
            name: c.check,
          })
          .catch(() => undefined)) as KhState | undefined;
        khrunOutcomes.set(c.id, outcomeOf(state));
        if (!state)
          throw new Error(
            `khrun left no khstate for ${c.check} (exit ${result.code}):\n${result.stdout}\n${result.stderr}`,
          );
      }),
    );
    // v2 runs every khcheck of the cluster: these must not be its.
    await kubectl(['delete', 'khchecks', '--all', '-n', nsKhrun]);
  }, 900_000);

  it('the v2.7.1 daemon runs each from the same YAML (its Deployment, first run of each)', async () => {
    for (const c of CASES) await applyCase(c, nsV2);
    daemon = await startKuberhealthyV2(kc, { namespace: nsV2, replicas: 1 });
    // v2 runs each check at its start; the khstate gets LastRun with the first result it writes.
    const states = await waitFor<KhState & KubernetesObject, Map<string, KhState>>(kc, {
      path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${nsV2}/${KHSTATE_PLURAL}`,
      decide: (items) => {
        const byName = new Map([...items.values()].map((s) => [s.metadata?.name ?? '', s as KhState]));
        return CASES.every((c) => byName.get(c.check)?.spec.LastRun) ? byName : undefined;
      },
      timeoutMs: 840_000,
      description: 'a result of every check written by Kuberhealthy v2.7.1',
    });
    for (const c of CASES) {
      v2Outcomes.set(c.id, outcomeOf(states.get(c.check)));
      console.log(`[kuberhealthy v2.7.1] ${c.check}: ${JSON.stringify(states.get(c.check)?.spec)}`);
    }
    await daemon.stop();
  }, 900_000);

  it('both record the same OK and the same errors, check by check', async () => {
    const rows: CompatRow[] = CASES.map((c) => {
      const compared = compareOutcomes({
        kuberhealthy: v2Outcomes.get(c.id) ?? { missing: true },
        khrun: khrunOutcomes.get(c.id) ?? { missing: true },
        namespaces: [nsKhrun, nsV2],
      });
      const explained = !compared.same && c.difference?.holds(compared) ? c.difference.explain : undefined;
      return {
        check: c.id,
        yaml: c.yaml,
        khcheck: c.check,
        edits: rewrites.get(c.id) ?? [],
        ...compared,
        ...(explained ? { note: explained, explained: true } : {}),
      };
    });
    await writeCompatResults(rows, {
      daemonRewrites: daemon?.rewrites.map((r) => `${r.object}: ${r.change}`) ?? [],
    });
    // A difference passes only as the one its case explains (docs/compatibility.md says why); any other
    // fails.
    expect(rows.filter((r) => !r.same && !r.explained)).toEqual([]);
  });
});
