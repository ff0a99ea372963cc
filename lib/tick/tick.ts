import type { Clock } from '../core/clock.ts';
import type { IdSource } from '../core/ids.ts';
import type { Log } from '../core/log.ts';
import { type KindName, targetLabel } from '../core/run-target.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { healthCheckTicks } from '../healthcheck/tick.ts';
import { khjobTicks } from '../job/tick.ts';
import { updateKhStateWithRetry, updateWithRetry } from '../kube/cas.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { NotifyConfig } from '../notify/config.ts';
import { holdAt } from '../notify/hold.ts';
import type { HttpSender } from '../notify/http.ts';
import { lightPolicy, policySource } from '../notify/policy-source.ts';
import type { Annotated } from '../notify/store.ts';
import { type SweepItem, sweepItem, sweepOutboxes } from '../notify/sweep.ts';
import { DEFAULT_TICK_CONCURRENCY, dispatchDue } from '../schedule/dispatch-due.ts';
import type { Dispatcher } from '../schedule/dispatcher.ts';
import { DEFAULT_DUE_TIMINGS, type DueTimings } from '../schedule/due.ts';
import { parentsFirst } from '../schedule/parents-first.ts';
import type { TickEntry } from '../schedule/tick-entry.ts';
import { khcheckTicks } from '../schedule/tick-khchecks.ts';
import {
  type AnyTickKind,
  anyTickKind,
  type DueObject,
  type ListedStates,
  type TickKind,
} from '../schedule/tick-kind.ts';
import { readNotifyState } from '../state/notify-state.ts';
import type { KhState } from '../state/resources.ts';
import { kuberhealthyGuard } from '../takeover/guard.ts';
import type { TickKube } from './tick-port.ts';

export interface TickConfig {
  scope: NamespaceScope;
  /** Who dispatches (pod name, Lambda request id): written into the claim. */
  identity: string;
  timings?: DueTimings;
  maxAttempts?: number;
  /** Dispatch checks a Kuberhealthy runs too (KHRUN_TAKE_OVER); else they are skipped as 'refused'. */
  takeOver?: boolean;
  /** The most khchecks per runner invocation (KHRUN_BATCH_SIZE); default 1, an invocation per check. */
  batchSize?: number;
  /** The most claims and dispatches in flight (KHRUN_TICK_CONCURRENCY); default DEFAULT_TICK_CONCURRENCY. */
  concurrency?: number;
}

/** What one cluster's tick runs on: its API server, where it dispatches, its clock and log. */
export type TickDeps = {
  kube: TickKube;
  dispatcher: Dispatcher;
  clock: Clock;
  log: Log;
  ids?: IdSource;
  /** Notifications: after dispatching, the tick delivers what outcome writes left in outboxes. */
  notify?: { config: NotifyConfig; http: HttpSender };
};
type Deps = TickDeps;

type Settings = Required<
  Pick<TickConfig, 'identity' | 'maxAttempts' | 'takeOver' | 'batchSize' | 'concurrency'>
>;

/**
 * One tick: finds the objects that are due and dispatches them, never running one itself. One list of each
 * kind per tick, then the same steps for every kind (khchecks, khjobs, HealthCheck), each in the order of
 * its labels: a kind's decision may leave an object out (a khjob that ran); one a Kuberhealthy runs is
 * 'refused' (its runner would refuse it too, exit 2), due or not; one not due is 'not-due'; the due ones
 * go through the one claim → send → release path (dispatch-due.ts), so of two ticks at once only one
 * sends each. Entries come back kind by kind, each kind's in label order.
 */
export async function runTick(deps: Deps, cfg: TickConfig): Promise<TickEntry[]> {
  const { kube, dispatcher } = deps;
  const timings = cfg.timings ?? DEFAULT_DUE_TIMINGS;
  const [checks, states, jobs, healthChecks] = await Promise.all([
    kube.listChecks(cfg.scope),
    kube.listStates(cfg.scope),
    dispatcher.runsKhJobs && kube.listJobs ? kube.listJobs(cfg.scope) : [],
    dispatcher.runsHealthChecks && kube.listHealthChecks ? kube.listHealthChecks(cfg.scope) : [],
  ]);
  const listed: ListedStates = new Map(states.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
  const s: Settings = {
    identity: cfg.identity,
    maxAttempts: cfg.maxAttempts ?? 4,
    takeOver: cfg.takeOver ?? false,
    batchSize: cfg.batchSize ?? 1,
    concurrency: cfg.concurrency ?? DEFAULT_TICK_CONCURRENCY,
  };
  const kinds: AnyTickKind[] = [
    anyTickKind(khcheckTicks({ checks, store: kube, timings })),
    anyTickKind(khjobTicks({ jobs, store: kube, timings })),
    ...(kube.healthChecks
      ? [anyTickKind(healthCheckTicks({ healthChecks, api: kube.healthChecks, timings }))]
      : []),
  ];
  const entries: TickEntry[] = [];
  for (const kind of kinds) entries.push(...(await kind.with((k) => tickKind(deps, k, listed, s))));
  if (deps.notify) await sweepListed(deps, deps.notify, { states, healthChecks, checks, jobs }, cfg.identity);
  return entries;
}

/**
 * The outboxes of the khstates and HealthChecks this tick listed anyway: what a runner left undelivered
 * (killed after its outcome write, a receiver down) is claimed and delivered here. A khstate's outbox is
 * written as the dispatch claim is, a HealthCheck's in its annotations (never its status).
 */
async function sweepListed(
  deps: Deps,
  notify: NonNullable<Deps['notify']>,
  listed: { states: KhState[]; healthChecks: HealthCheck[]; checks: Annotated[]; jobs: Annotated[] },
  identity: string,
) {
  const { kube } = deps;
  const nowMs = deps.clock.nowMs();
  // A check's silence from its annotations (the khcheck's, else the khjob's, of the khstate's name).
  const objects = new Map<string, Annotated>();
  for (const o of [...listed.jobs, ...listed.checks])
    objects.set(`${o.metadata.namespace}/${o.metadata.name}`, o);
  const kinds = new Map<Annotated, KindName>(listed.jobs.map((j) => [j, 'khjob']));
  const policies = policySource(notify.config, { readDefaults: kube.readNotifyDefaults, log: deps.log });
  // What holds a check's held notifications now: its annotations over the cluster's defaults (no request);
  // for an object whose outbox holds one, the namespace's defaults too (policySource: one GET of its
  // ConfigMap per namespace, and only with namespaceDefaults on), so a window set there holds them here too.
  const holdOf = async (listed: Annotated, o: Annotated | undefined) => {
    const holding = readNotifyState(listed)?.outbox.some((n) => n.held) ?? false;
    const subject = o && {
      kind: kinds.get(o) ?? (o === listed ? 'healthcheck' : 'khcheck'),
      namespace: o.metadata.namespace,
      name: o.metadata.name,
      annotations: o.metadata.annotations,
    };
    const policy =
      holding && subject
        ? (await policies.resolve(subject)).policy
        : lightPolicy(notify.config, o?.metadata.annotations);
    return holdAt(policy, nowMs);
  };
  const items: SweepItem[] = [];
  for (const state of listed.states)
    items.push(
      sweepItem<KhState>(
        state,
        { update: (loop) => updateKhStateWithRetry(kube, state.metadata, loop) },
        await holdOf(state, objects.get(`${state.metadata.namespace}/${state.metadata.name}`)),
      ),
    );
  const writes = kube.healthChecks;
  if (writes)
    for (const hc of listed.healthChecks)
      items.push(
        sweepItem<HealthCheck>(
          hc,
          {
            update: (loop) =>
              updateWithRetry({
                ...loop,
                target: `${hc.metadata.namespace}/${hc.metadata.name}`,
                read: () => writes.get(hc.metadata.namespace, hc.metadata.name),
                persist: (next) => writes.replace(next, loop.writer),
              }),
          },
          await holdOf(hc, hc),
        ),
      );
  const swept = await sweepOutboxes({ ...notify, clock: deps.clock, log: deps.log }, items, identity);
  if (swept.claimed) deps.log.info('outboxes swept', { ...swept });
}

/** One kind's part of the tick: decided from the lists, in label order; the due ones claimed and sent. */
async function tickKind<T, S>(
  deps: Deps,
  kind: TickKind<T, S>,
  states: ListedStates,
  s: Settings,
): Promise<TickEntry[]> {
  const items = kind.objects
    .map((item) => ({ item, target: kind.target(item) }))
    .map((o) => ({ ...o, label: targetLabel(o.target) }))
    .sort((a, b) => a.label.localeCompare(b.label));
  // Entries in order; a due object's is put in its place once it is claimed and sent.
  const entries: Array<TickEntry | undefined> = [];
  const due: Array<DueObject<S> & { at: number }> = [];
  for (const { item, target, label } of items) {
    const listed = kind.listed(item, states);
    const decide = (state: S | null) => kind.decide(item, state, deps.clock.nowMs());
    const first = decide(listed);
    if (first === undefined) continue;
    const { namespace, name } = target;
    const refusal = kuberhealthyGuard(
      { namespace, name },
      { takeOver: s.takeOver },
    )?.(kind.guardView(listed));
    if (refusal !== undefined) {
      // The runner would refuse it too (exit 2): sending it would only make a failed Job each interval.
      deps.log.warn('refused: a Kuberhealthy runs it', { check: label });
      entries.push({ check: label, decision: first, result: 'refused', error: refusal });
      continue;
    }
    if (!first.due) {
      entries.push({ check: label, decision: first, result: 'not-due' });
      continue;
    }
    const store = kind.claims(target);
    due.push({ label, send: kind.send(item), listed, first, decide, store, at: entries.length });
    entries.push(undefined);
  }
  // Parents before the children that depend on them, so a child's failure finds its parent's fresh.
  const targets = new Map(
    items.map((o) => [o.label, { target: o.target, annotations: kind.annotations?.(o.item) }]),
  );
  const { order, cycle } = parentsFirst(
    due,
    (d) => targets.get(d.label) ?? { target: { kind: kind.kind, namespace: '', name: d.label } },
  );
  if (cycle.length)
    deps.log.warn('dependency cycle among due checks; dispatched in name order', { checks: cycle });
  due.splice(0, due.length, ...order);
  const sent = await dispatchDue(deps, due, {
    identity: s.identity,
    maxAttempts: s.maxAttempts,
    batchSize: kind.batches ? s.batchSize : 1,
    concurrency: s.concurrency,
  });
  sent.forEach((entry, i) => {
    entries[due[i]!.at] = entry;
  });
  return entries.filter((e) => e !== undefined);
}
