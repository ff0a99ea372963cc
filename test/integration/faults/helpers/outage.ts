import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { readAcceptedReport, readLastOutcome } from '../../../../lib/state/khstate.ts';
import { freshNamespace } from '../../helpers/cluster.ts';
import { createCheck, npmClientEnv, readState } from '../../helpers/khrun.ts';
import { type CheckerOptions, checkerContainer, type Gate, NPM_CLIENT_REPORT } from './checker.ts';
import { checkPods, isRunning, stateProblems, waitForCheckPod } from './invariants.ts';
import { logLines, type Runner, resultOf, startRunner, type Target } from './khrun-process.ts';

/** A report client in use, and what its run must record. */
export interface Client {
  name: string;
  checker: (opts: CheckerOptions) => CheckerOptions;
  expected: { kind: string; errors?: string[] };
}

/** The report clients: v2.7.1's Go checkclient (both outcomes), a retrying client, the npm client. */
export function reportClients(goChecker: string): Client[] {
  return [
    { name: 'go-ok', checker: (o) => ({ ...o, exec: goChecker }), expected: { kind: 'Succeeded' } },
    {
      name: 'go-fail',
      checker: (o) => ({ ...o, exec: goChecker, execArgs: ['fail'] }),
      expected: { kind: 'Failed', errors: ['go checkclient reported a failure'] },
    },
    { name: 'retrying', checker: (o) => o, expected: { kind: 'Succeeded' } },
    {
      name: 'npm',
      checker: (o) => ({ ...o, exec: process.execPath, execArgs: NPM_CLIENT_REPORT, env: npmClientEnv }),
      expected: { kind: 'Succeeded' },
    },
  ];
}

export interface OutageSetup {
  kc: KubeConfig;
  target: Target;
  gate: Gate;
  clients: Client[];
  /** Every runner started, for the file's afterAll. */
  runners: Runner[];
  /**
   * A namespace per scenario label, made before any fault: after one, the controller manager may take a
   * minute to create a new namespace's default ServiceAccount, which is not what these scenarios measure.
   */
  namespaces: Map<string, string>;
}

/** One fresh namespace per label, each with its default ServiceAccount. */
export async function outageNamespaces(kc: KubeConfig, labels: string[]): Promise<Map<string, string>> {
  const made = new Map<string, string>();
  for (const label of labels) made.set(label, await freshNamespace(kc, `f-${label}`));
  return made;
}

export interface OutageResult {
  downMs: number;
  heldMs: number;
  runs: number;
  /** Runs whose checker reported: each called the gate just before it sent its report. */
  reported: number;
  /** Runs whose khstate holds the report their checker sent, as the recorded outcome. */
  recorded: number;
  /** The clients whose report was not recorded. */
  lostBy: string[];
  /** Log lines: watches resumed, reports that waited for the API server, reports it gave up on (500). */
  resumed: number;
  waited: number;
  gaveUp: number;
  problems: string[];
}

/**
 * One run per client waits for its report while a component is down: the checkers report just after
 * stop(), the component stays down holdMs more (the fault's length), then start(). Counts what was
 * reported and what the khstates recorded; problems lists every run that did not end as its checker said.
 */
export async function runOutage(
  s: OutageSetup,
  label: string,
  fault: { stop: () => Promise<void>; start: () => Promise<void>; holdMs: number },
): Promise<OutageResult> {
  const ns = s.namespaces.get(label);
  if (!ns) throw new Error(`no namespace was made for ${label} before the faults`);
  const name = (c: Client) => `${label}-${c.name}`;
  for (const c of s.clients) {
    const checker = c.checker({ gateUrl: s.gate.waitUrl(name(c)), notifyUrl: s.gate.notifyUrl(name(c)) });
    await createCheck(s.kc, ns, name(c), { containers: [checkerContainer(checker)] }, { timeout: '3m' });
  }
  const live = s.clients.map((c) => {
    const runner = startRunner(name(c), ns, {}, s.target);
    s.runners.push(runner);
    return runner;
  });
  await Promise.all(
    s.clients.map((c) => waitForCheckPod(s.kc, ns, name(c), isRunning, 'pod Running', 90_000)),
  );

  await fault.stop();
  const downAt = Date.now();
  for (const c of s.clients) s.gate.open(name(c));
  // Each checker says "reporting now" just before it sends its report: the count of reports sent, whether
  // or not they then landed (a checker that never got there is counted out, and said so below).
  const notified = await Promise.allSettled(s.clients.map((c) => s.gate.notified(name(c), 30_000)));
  const reportedAt = Date.now();
  await new Promise((resolve) => setTimeout(resolve, fault.holdMs));
  await fault.start();
  // From the moment it was down to the moment it answered again, and how long the reports were in flight.
  const downMs = Date.now() - downAt;
  const heldMs = Date.now() - reportedAt;

  const exits = await Promise.all(live.map((r) => r.done));
  const r = {
    recorded: 0,
    resumed: 0,
    waited: 0,
    gaveUp: 0,
    lostBy: [] as string[],
    problems: [] as string[],
  };
  for (const [i, c] of s.clients.entries()) {
    const check = name(c);
    const exit = exits[i]!;
    const output = `${exit.stdout}${exit.stderr}`;
    const result = resultOf(exit);
    const state = await readState(s.kc, ns, check);
    const logs = logLines(output);
    r.resumed += logs.filter((l) => l.message === 'watch interrupted; resuming').length;
    r.waited += logs.filter((l) => l.message === 'API server unavailable; the report waits for it').length;
    r.gaveUp += logs.filter((l) => l.message === 'report could not be stored: API server unavailable').length;
    const asReported =
      exit.code === 0 &&
      result?.result === 'recorded' &&
      result.kind === c.expected.kind &&
      (!c.expected.errors || JSON.stringify(result.errors) === JSON.stringify(c.expected.errors)) &&
      readAcceptedReport(state)?.uuid === state?.spec.uuid &&
      readLastOutcome(state)?.kind === c.expected.kind;
    if (asReported) r.recorded++;
    else {
      r.lostBy.push(c.name);
      const said = await checkerLogs(s.kc, ns, check);
      r.problems.push(
        `${check}: exit ${exit.code}, ${JSON.stringify(result)}\nchecker: ${said}\n${output.slice(-3000)}`,
      );
    }
    r.problems.push(...stateProblems(state, ns).map((p) => `${check}: ${p}`));
    // The run UUID is a credential: not even the errors of an outage may carry it into the logs.
    if (state?.spec.uuid && output.includes(state.spec.uuid))
      r.problems.push(`${check}: the run UUID appears in full in the runner's output`);
  }
  for (const [i, n] of notified.entries())
    if (n.status === 'rejected') r.problems.push(`${name(s.clients[i]!)}: its checker never reported`);
  const reported = notified.filter((n) => n.status === 'fulfilled').length;
  return { downMs, heldMs, runs: s.clients.length, reported, ...r };
}

/** What the check's checker pods printed (the client's own words on its report), for failure messages. */
async function checkerLogs(kc: KubeConfig, namespace: string, check: string): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const logs = await Promise.all(
    (await checkPods(kc, namespace, check)).map((p) =>
      core.readNamespacedPodLog({ namespace, name: p.metadata?.name ?? '' }).catch((e: unknown) => String(e)),
    ),
  );
  return logs.join(' | ').slice(-1000);
}
