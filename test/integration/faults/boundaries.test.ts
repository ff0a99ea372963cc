import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  CHECK_NAME_LABEL,
  CHECKER_POD_CHECK_ANNOTATION,
  KH_ENV,
  RUN_ID_LABEL,
} from '../../../lib/check/pod-builder.ts';
import { readActiveRun, readLastOutcome } from '../../../lib/state/khstate.ts';
import { adminKubeConfig, dropNamespace, freshNamespace } from '../helpers/cluster.ts';
import { createCheck, readState } from '../helpers/khrun.ts';
import { checkerContainer } from './helpers/checker.ts';
import { faultScenario } from './helpers/fault-scenario.ts';
import { checkPods, stateProblems } from './helpers/invariants.ts';
import {
  logLines,
  type Runner,
  type RunnerExit,
  resultOf,
  startRunner,
  stopRunner,
} from './helpers/khrun-process.ts';
import { type ReportTally, recordedOf, startReportTally } from './helpers/report-tally.ts';

// Boundaries: what a khcheck author controls (extra labels and annotations, the pod spec and its env)
// cannot point khrun at another check's khstate or another namespace, nor replace the injected KH_*
// variables; and the run UUID, the report credential, never appears in full in the runner's logs, even
// at DEBUG.

const kc = adminKubeConfig();
let ns: string;
let ns2: string;
let tally: ReportTally;
const runners: Runner[] = [];

beforeAll(async () => {
  ns = await freshNamespace(kc, 'f-bound');
  ns2 = await freshNamespace(kc, 'f-bound-other');
  tally = await startReportTally(kc, inject('hostIp'));
});
afterAll(async () => {
  for (const r of runners) await stopRunner(r);
  await tally?.close();
  await dropNamespace(kc, ns);
  await dropNamespace(kc, ns2);
});

function run(check: string, namespace: string, env: Record<string, string> = {}): Promise<RunnerExit> {
  const runner = startRunner(check, namespace, env);
  runners.push(runner);
  return runner.done;
}

const FORGED_ENV = [
  { name: KH_ENV.runUuid, value: '00000000-0000-4000-8000-000000000000' },
  { name: KH_ENV.reportingUrl, value: 'http://127.0.0.1:9/externalCheckStatus' },
  { name: KH_ENV.deadline, value: '1' },
  { name: KH_ENV.podNamespace, value: 'kube-system' },
];

describe('what a khcheck cannot do', () => {
  it("cannot make khrun write another check's or namespace's khstate, nor override the injected env", async () => {
    const fault =
      'boundary: a khcheck forging the check-name annotation, run-id and check-name labels and every KH_* variable (containers and init containers)';
    const row = faultScenario(fault);
    await createCheck(kc, ns, 'victim', { containers: [checkerContainer()] });
    await createCheck(kc, ns2, 'victim', { containers: [checkerContainer()] });
    const victims = [await run('victim', ns), await run('victim', ns2)];
    const before = [await readState(kc, ns, 'victim'), await readState(kc, ns2, 'victim')];

    const forged = (c: V1Container): V1Container => ({ ...c, env: [...FORGED_ENV, ...(c.env ?? [])] });
    await createCheck(
      kc,
      ns,
      'intruder',
      {
        initContainers: [forged({ name: 'init', image: 'busybox:1.36', command: ['sh', '-c', 'exit 0'] })],
        containers: [forged(checkerContainer({ notifyUrl: tally.url('intruder') }))],
      },
      {
        extraLabels: { [RUN_ID_LABEL]: 'forged-run', [CHECK_NAME_LABEL]: 'victim', app: 'not-kuberhealthy' },
        extraAnnotations: { [CHECKER_POD_CHECK_ANNOTATION]: 'victim', 'example.com/kept': 'yes' },
      },
    );
    const exit = await run('intruder', ns);
    const state = await readState(kc, ns, 'intruder');
    const uuid = state?.spec.uuid ?? '';
    const [pod] = await checkPods(kc, ns, 'intruder');
    const after = [await readState(kc, ns, 'victim'), await readState(kc, ns2, 'victim')];
    // What of the forgery reached the created pod: labels, annotation, and each KH_* variable of each container.
    const containers = [...(pod?.spec?.initContainers ?? []), ...(pod?.spec?.containers ?? [])];
    const forgedEnv = containers.flatMap((c) =>
      FORGED_ENV.filter((f) => (c.env ?? []).some((e) => e.name === f.name && e.value === f.value)),
    ).length;
    const forgedMeta = [
      pod?.metadata?.labels?.[RUN_ID_LABEL] === 'forged-run',
      pod?.metadata?.labels?.[CHECK_NAME_LABEL] === 'victim',
      pod?.metadata?.annotations?.[CHECKER_POD_CHECK_ANNOTATION] === 'victim',
    ].filter(Boolean).length;
    const victimsWritten = after.filter(
      (s, i) => s?.metadata.resourceVersion !== before[i]?.metadata.resourceVersion,
    ).length;
    await row.record({
      fault,
      runs: 1,
      outcome: `in the created pod ${forgedMeta} of 3 forged labels and annotations and ${forgedEnv} of ${FORGED_ENV.length * containers.length} forged KH_* values (${containers.length} containers) left in place; the run recorded as its own check (${readLastOutcome(state)?.kind}); ${victimsWritten} of the 2 victim checks' khstates (same and other namespace) written meanwhile`,
      reported: tally.runs('intruder').length,
      recorded: recordedOf(tally.runs('intruder'), [readLastOutcome(state)?.uuid]),
    });

    for (const victim of victims) expect(resultOf(victim)).toMatchObject({ kind: 'Succeeded' });
    expect(resultOf(exit), exit.stderr).toMatchObject({ result: 'recorded', kind: 'Succeeded' });
    expect(stateProblems(state, ns)).toEqual([]);
    expect(pod).toBeDefined();
    const p = pod as V1Pod;
    expect(p.metadata?.namespace).toBe(ns);
    expect(p.metadata?.labels).toMatchObject({
      [RUN_ID_LABEL]: uuid,
      [CHECK_NAME_LABEL]: 'intruder',
      app: 'kuberhealthy-check',
    });
    expect(p.metadata?.annotations).toMatchObject({
      [CHECKER_POD_CHECK_ANNOTATION]: 'intruder',
      'example.com/kept': 'yes',
    });
    for (const c of [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])]) {
      const injected = (c.env ?? []).filter((e) => Object.values(KH_ENV).includes(e.name as never));
      expect(injected.map((e) => e.name).sort(), c.name).toEqual(Object.values(KH_ENV).sort());
      const value = (name: string) => injected.find((e) => e.name === name);
      expect(value(KH_ENV.runUuid)?.value, c.name).toBe(uuid);
      expect(value(KH_ENV.reportingUrl)?.value, c.name).not.toMatch(/127\.0\.0\.1:9\//);
      expect(Number(value(KH_ENV.deadline)?.value), c.name).toBeGreaterThan(Date.now() / 1000);
      expect(value(KH_ENV.podNamespace)?.valueFrom?.fieldRef?.fieldPath, c.name).toBe('metadata.namespace');
    }
    // The victims' khstates were not written at all.
    expect(after.map((s) => s?.metadata.resourceVersion)).toEqual(
      before.map((s) => s?.metadata.resourceVersion),
    );
  });

  it('run UUIDs never appear in full in the runner logs, at DEBUG, through a kill and an adoption', async () => {
    const fault = 'boundary: run UUIDs in the runner logs at DEBUG (a run, a killed run, its adoption)';
    const row = faultScenario(fault);
    await createCheck(kc, ns, 'quiet', {
      containers: [checkerContainer({ delayMs: 500, notifyUrl: tally.url('quiet') })],
    });
    const debug = { POWERTOOLS_LOG_LEVEL: 'DEBUG', KHRUN_LEASE_SECONDS: '2' };
    const outputs: string[] = [];
    const plain = await run('quiet', ns, debug);
    outputs.push(plain.stdout + plain.stderr);
    const first = (await readState(kc, ns, 'quiet'))?.spec.uuid ?? '';
    const killed = await run('quiet', ns, { ...debug, KHRUN_FAILPOINT_KILL_AT: 'pod created' });
    outputs.push(killed.stdout + killed.stderr);
    const orphan = readActiveRun(await readState(kc, ns, 'quiet'));
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, (orphan?.leaseUntilMs ?? 0) - Date.now()) + 50),
    );
    const adopted = await run('quiet', ns, debug);
    outputs.push(adopted.stdout + adopted.stderr);
    const second = (await readState(kc, ns, 'quiet'))?.spec.uuid ?? '';

    const text = outputs.join('\n');
    const lines = logLines(text);
    const leaked = [first, second].filter((uuid) => uuid && text.includes(uuid)).length;
    await row.record({
      fault,
      runs: outputs.length,
      outcome: `${lines.length} JSON log lines and the results of ${outputs.length} invocations (2 runs) scanned (POWERTOOLS_LOG_LEVEL=DEBUG): the full UUID of ${leaked} of 2 runs found in them; the 8-character prefix correlates them`,
      reported: tally.runs('quiet').length,
      recorded: recordedOf(tally.runs('quiet'), [first, second]),
    });

    expect(orphan).toBeDefined();
    expect(resultOf(adopted)).toMatchObject({ result: 'recorded', adopted: true });
    expect(second).toBe(orphan?.uuid);
    expect(lines.length).toBeGreaterThan(0);
    for (const uuid of [first, second]) {
      expect(uuid).toMatch(/^[0-9a-f-]{36}$/);
      expect(text.includes(uuid), `the full run UUID ${uuid.slice(0, 8)}… is in the logs`).toBe(false);
      // The 8-character prefix is there: runs can still be told apart and correlated.
      expect(lines.some((l) => l.run === uuid.slice(0, 8))).toBe(true);
    }
  });
});
