import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { CHECK_NAME_LABEL } from '../check/pod-builder.ts';
import { isRunPod } from '../check/run-label.ts';
import { EXIT } from '../core/exit-codes.ts';
import { escapeControls as safe } from '../core/terminal-text.ts';
import { oneLine, truncateChars } from '../core/text.ts';
import { checkViewOf } from '../healthcheck/check-view.ts';
import {
  HC_GROUP,
  HC_KIND,
  HC_PLURAL,
  HC_POD,
  HC_VERSION,
  type HealthCheck,
} from '../healthcheck/resources.ts';
import { FOREIGN_RUNNER, stateViewOf, timeoutMsOf } from '../healthcheck/state-view.ts';
import { healthCheckHasRun, runIntervalMsOf } from '../healthcheck/status-json.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { readHistory } from '../state/history.ts';
import {
  readAcceptedReport,
  readActiveRun,
  readConsecutiveFailures,
  readLastOutcome,
} from '../state/khstate.ts';
import {
  KH_GROUP,
  KH_VERSION,
  KHCHECK_PLURAL,
  KHSTATE_PLURAL,
  type KhCheck,
  type KhState,
} from '../state/resources.ts';
import { readTotals } from '../state/totals.ts';
import { runDurationSeconds } from '../status/run-duration.ts';
import { hasRun } from '../status/status-json.ts';
import { describeAlerts } from './describe-alerts.ts';
import { type DescribeLog, readDescribeLog, renderDescribeLog } from './describe-log.ts';
import { formatTable, humanDuration, paint, shortDuration } from './table.ts';

/** Everything `khrun describe` shows, as read from the API server. */
export interface DescribeView {
  name: string;
  namespace: string;
  check: KhCheck | null;
  state: KhState | null;
  pods: V1Pod[];
  events: CoreV1Event[];
  /** Set when what is described is a Kuberhealthy v3 HealthCheck (check and state are its views). */
  kind?: typeof HC_KIND;
  /** The checker's log tail of the described run (describe-log.ts); absent: not read. */
  log?: DescribeLog;
}

const ms = (t: Date | string | undefined | null) => (t ? new Date(t).getTime() : Number.NaN);
const short = (uuid: string) => uuid.slice(0, 8);

/** The run described: the active one, else the last recorded one; its moments in time order. */
export function runTimeline(view: DescribeView): { title: string; lines: [number, string][] } | undefined {
  const active = readActiveRun(view.state);
  const last = readLastOutcome(view.state);
  const uuid = active?.uuid ?? last?.uuid;
  if (!uuid) return undefined;
  const lines: [number, string][] = [];
  const add = (at: number, what: string) => {
    if (Number.isFinite(at)) lines.push([at, what]);
  };
  if (active) {
    add(active.startedAtMs, `claimed by ${active.runner}`);
    add(active.deadlineMs, 'deadline');
  } else if (last) {
    add(last.startedAtMs, 'claimed');
    add(last.finishedAtMs, `recorded: ${last.kind}`);
  }
  const pod = view.pods.find((p) => isRunPod(p, uuid));
  if (pod) {
    add(ms(pod.metadata?.creationTimestamp), `pod ${pod.metadata?.name} created`);
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'True');
    add(ms(scheduled?.lastTransitionTime), `scheduled on ${pod.spec?.nodeName ?? '?'}`);
    for (const c of pod.status?.containerStatuses ?? []) {
      add(ms(c.state?.running?.startedAt ?? c.state?.terminated?.startedAt), `container ${c.name} started`);
      const done = c.state?.terminated;
      if (done)
        add(
          ms(done.finishedAt),
          `container ${c.name} exited ${done.exitCode}${done.reason ? ` (${done.reason})` : ''}`,
        );
      const waiting = c.state?.waiting;
      if (waiting?.reason)
        add(ms(pod.metadata?.creationTimestamp), `container ${c.name} waiting: ${waiting.reason}`);
    }
  }
  const report = readAcceptedReport(view.state);
  if (report?.uuid === uuid) add(report.atMs, `report accepted: ${report.ok ? 'OK' : 'not OK'}`);
  lines.sort((a, b) => a[0] - b[0]);
  const podText = pod ? `, pod ${pod.metadata?.name} (${pod.status?.phase ?? 'unknown'})` : '';
  return { title: `${active ? 'active' : 'last'} run ${short(uuid)}${podText}`, lines };
}

/**
 * The text `khrun describe` prints, in kubectl describe's layout. Every string read from the cluster goes
 * through safe() (core/terminal-text.ts) before it is laid out or colored: only khrun's own color codes
 * reach the terminal as control characters.
 */
export function renderDescribe(view: DescribeView, opts: { nowMs: number; color: boolean }): string {
  const { state, check, nowMs, color } = { ...view, ...opts };
  const out: string[] = [];
  const field = (label: string, value: string) => out.push(`${`${label}:`.padEnd(15)}${value}`);
  const when = (at: number) =>
    `${new Date(at).toISOString().replace('.000Z', 'Z')} (${humanDuration(nowMs - at)} ago)`;
  field('Name', safe(view.name));
  field('Namespace', safe(view.namespace));
  if (view.kind) field('Kind', `${view.kind} (${HC_GROUP}/${HC_VERSION})`);
  if (check) {
    field('Run Interval', safe(check.spec?.runInterval ?? ''));
    field('Timeout', safe(check.spec?.timeout ?? ''));
    field(
      'Containers',
      safe((check.spec?.podSpec?.containers ?? []).map((c) => `${c.name} (${c.image})`).join(', ')),
    );
  } else {
    field('KHCheck', paint('<none>: this khstate has no khcheck', 'yellow', color));
  }
  const errors = (state?.spec?.Errors ?? []).filter((e) => e.trim() !== '');
  if (!state || !hasRun(state)) field('Status', paint('never run', 'dim', color));
  else if (errors.length === 0) field('Status', paint('OK', 'green', color));
  else
    field('Status', paint(`FAILING (${readConsecutiveFailures(state)} consecutive failures)`, 'red', color));
  if (state && hasRun(state)) {
    const lastRun = ms(state.spec.LastRun);
    const took = shortDuration(runDurationSeconds(state.spec.RunDuration) * 1000);
    const node = state.spec.Node ? `, on ${state.spec.Node}` : '';
    field(
      'Last Run',
      `${Number.isFinite(lastRun) ? when(lastRun) : '-'}, took ${took}${safe(`${node}, by ${state.spec.AuthoritativePod}`)}`,
    );
    field('Last Outcome', safe(readLastOutcome(state)?.kind ?? '-'));
    const t = readTotals(state);
    field(
      'Totals',
      `${t.succeeded} succeeded, ${t.failed} failed, ${t.timedOut} timed out, ${t.executionError} execution errors, ${t.skipped} skipped`,
    );
  }
  out.push(...describeAlerts(view.kind ? state : check, state, { nowMs, color }));
  if (errors.length) {
    out.push('Errors:');
    for (const e of errors)
      out.push(paint(`  - ${safe(e, { keepNewlines: true }).replace(/\n/g, '\n    ')}`, 'red', color));
  }
  const timeline = runTimeline(view);
  if (timeline) {
    out.push(`Run:           ${safe(timeline.title)}`);
    const start = timeline.lines[0]?.[0] ?? 0;
    for (const [at, what] of timeline.lines)
      out.push(`  ${`+${shortDuration(Math.max(0, at - start))}`.padEnd(9)}${safe(what)}`);
  }
  if (view.log) out.push(...renderDescribeLog(view.log, color));
  const history = readHistory(state).reverse();
  out.push(history.length ? 'History (newest first):' : 'History:       <none>');
  if (history.length) {
    const rows = history.map((e) => [
      humanDuration(nowMs - e.atMs),
      paint(safe(e.kind), e.kind === 'Skipped' ? 'dim' : e.ok ? 'green' : 'red', color),
      shortDuration(e.durationMs),
      truncateChars(safe(oneLine(e.error ?? '')), 100),
    ]);
    out.push(indent(formatTable([['AGE', 'OUTCOME', 'DURATION', 'ERROR'], ...rows])));
  }
  const events = [...view.events].sort((a, b) => eventTime(a) - eventTime(b));
  out.push(events.length ? 'Events:' : 'Events:        <none>');
  if (events.length) {
    const rows = events.map((e) => [
      paint(safe(e.type ?? ''), e.type === 'Warning' ? 'yellow' : undefined, color),
      safe(e.reason ?? ''),
      humanDuration(nowMs - eventTime(e)),
      safe(e.source?.component ?? e.reportingComponent ?? ''),
      safe(oneLine(e.message ?? '')),
    ]);
    out.push(indent(formatTable([['TYPE', 'REASON', 'AGE', 'FROM', 'MESSAGE'], ...rows])));
  }
  return out.join('\n');
}

const indent = (text: string) => text.replace(/^/gm, '  ');
const eventTime = (e: CoreV1Event) =>
  ms(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp);

async function orNull<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/** Reads the khcheck, khstate, the check's pods and the Events on the khcheck. */
export async function readDescribeView(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<DescribeView> {
  const custom = client.custom;
  const core = client.core;
  const co = { group: KH_GROUP, version: KH_VERSION, namespace, name };
  const [check, state, pods, events] = await Promise.all([
    orNull(custom.getNamespacedCustomObject({ ...co, plural: KHCHECK_PLURAL }) as Promise<KhCheck>),
    orNull(custom.getNamespacedCustomObject({ ...co, plural: KHSTATE_PLURAL }) as Promise<KhState>),
    core.listNamespacedPod({ namespace, labelSelector: `${CHECK_NAME_LABEL}=${name}` }),
    core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=KuberhealthyCheck,involvedObject.name=${name}`,
    }),
  ]);
  return { name, namespace, check, state, pods: pods.items, events: events.items };
}

/**
 * A HealthCheck as describe shows a khcheck: its khcheck and khstate views (lib/healthcheck), its pods by
 * v3's `healthcheck` label and the Events on it; null when there is none of that name.
 */
export async function readHealthCheckDescribeView(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<DescribeView | null> {
  const custom = client.custom;
  const core = client.core;
  const hc = (await orNull(
    custom.getNamespacedCustomObject({
      group: HC_GROUP,
      version: HC_VERSION,
      plural: HC_PLURAL,
      namespace,
      name,
    }),
  )) as HealthCheck | null;
  if (!hc) return null;
  const [pods, events] = await Promise.all([
    core.listNamespacedPod({ namespace, labelSelector: `${HC_POD.checkLabel}=${name}` }),
    core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=${HC_KIND},involvedObject.name=${name}`,
    }),
  ]);
  const check = checkViewOf(hc, { timeoutMs: timeoutMsOf(hc), runIntervalMs: runIntervalMsOf(hc) });
  return {
    name,
    namespace,
    check,
    state: describedState(hc),
    pods: pods.items,
    events: events.items,
    kind: HC_KIND,
  };
}

/**
 * The khstate view describe shows for a HealthCheck. A run by v3's controller records no pod, and the view's
 * AuthoritativePod (khrun's annotation) is what "has run" is read from, so such a run is shown as by
 * FOREIGN_RUNNER instead of as never run. Pure.
 */
export function describedState(hc: HealthCheck): KhState {
  const state = stateViewOf(hc);
  if (!state.spec.AuthoritativePod && healthCheckHasRun(hc)) state.spec.AuthoritativePod = FOREIGN_RUNNER;
  return state;
}

/** `khrun describe CHECK`: a khcheck or khstate, else a HealthCheck; exit 2 when none of that name exists. */
export async function describeCommand(opts: {
  client: KubeClient;
  namespace: string;
  name: string;
  color: boolean;
  nowMs: () => number;
  write: (text: string) => void;
  /** Why there is nothing to show (stderr). */
  warn: (text: string) => void;
}): Promise<number> {
  const khcheck = await readDescribeView(opts.client, opts.namespace, opts.name);
  const view =
    khcheck.check || khcheck.state
      ? khcheck
      : await readHealthCheckDescribeView(opts.client, opts.namespace, opts.name);
  if (!view) {
    opts.warn(`khrun: no khcheck, khstate or HealthCheck named ${opts.name} in namespace ${opts.namespace}`);
    return EXIT.usage;
  }
  const log = await readDescribeLog(opts.client, view);
  opts.write(
    renderDescribe({ ...view, ...(log ? { log } : {}) }, { nowMs: opts.nowMs(), color: opts.color }),
  );
  return EXIT.ok;
}
