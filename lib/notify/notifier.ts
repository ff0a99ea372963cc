import { randomUUID } from 'node:crypto';
import type { Clock } from '../core/clock.ts';
import type { Log } from '../core/log.ts';
import type { KindName } from '../core/run-target.ts';
import { type NotifyState, readNotifyState, withNotifyState } from '../state/notify-state.ts';
import type { OutcomeKind } from '../state/outcome-kind.ts';
import type { NotifyConfig } from './config.ts';
import {
  type DeliveryBudget,
  deliverPass,
  deliveryBudget,
  leaseSpanMs,
  send,
  settlePass,
} from './deliver.ts';
import type { ReadParent } from './dependencies.ts';
import { holdAt } from './hold.ts';
import type { HttpSender } from './http.ts';
import { deliverableBy, leaseDue, leasedTo } from './outbox.ts';
import { type ParentReads, parentReads } from './parent-reads.ts';
import type { Policy } from './policy.ts';
import { type PolicySubject, policySource, type ReadNamespaceDefaults } from './policy-source.ts';
import type { Annotated, OutboxStore } from './store.ts';
import { decideTransition, keyOf, needsPolicy, type OutcomeFacts, renewMsOf } from './transition.ts';

/** What an outcome write tells the notifier: the check, the outcome as recorded, who writes it. */
export interface RecordedFacts {
  subject: PolicySubject;
  outcome: { kind: OutcomeKind; ok: boolean; errors: readonly string[] };
  /** The run ('' when there was none: an invalid check recorded without a run). */
  runUuid: string;
  atMs: number;
  /** The failure streak the write records, this outcome included. */
  consecutiveFailures: number;
  runIntervalMs: number;
  /** The invocation that delivers what this write queues (the run's holder): leased to it. Absent: nobody (the tick will). */
  holder?: string;
}

export interface NotifierPorts {
  http: HttpSender;
  clock: Clock;
  log: Log;
  readDefaults?: ReadNamespaceDefaults;
  /** Reads a parent's state (notify.khrun.dev/depends-on); absent: dependencies are not followed. */
  readParent?: ReadParent;
}

/**
 * A process's notifications (one per runner session, tick or Lambda invocation): decides transitions
 * inside outcome writes, delivers what those writes leased to their holder, renews firing alerts at
 * Alertmanager, and sweeps outboxes left behind. Shares one delivery budget and one read of each
 * namespace's defaults between all of them.
 */
export interface Notifier {
  readonly config: NotifyConfig;
  readonly budget: DeliveryBudget;
  /** Parents' states read so far by this process's decisions (dependencies: a figure of their cost). */
  readonly parentReads: () => number;
  /**
   * The object carrying the transition this outcome decides, for the outcome's own write (pure but for
   * the namespace defaults' one read). Never throws: a failure to decide is logged and leaves the
   * notify state as it was, so the outcome is recorded all the same.
   */
  decide<S extends Annotated>(recorded: S, facts: RecordedFacts): Promise<S>;
  /** Whether the written object holds notifications leased to holder. */
  pending(written: Annotated, holder: string): boolean;
  /**
   * After the write landed: delivers what it leased to holder and marks it done (one more write, only
   * when something was leased); renews a firing alert at Alertmanager on a failing run that queued
   * nothing (no write). Never throws.
   */
  afterWrite<S extends Annotated>(store: OutboxStore<S>, written: S, facts: RecordedFacts): Promise<void>;
}

export function createNotifier(config: NotifyConfig, ports: NotifierPorts): Notifier {
  const policies = policySource(config, { readDefaults: ports.readDefaults, log: ports.log });
  const budget = deliveryBudget(config.maxDeliveries);
  const deps = { config, http: ports.http, clock: ports.clock, log: ports.log, budget };
  const parents: ParentReads = parentReads(ports.readParent, ports.clock);

  return {
    config,
    budget,
    parentReads: () => parents.count(),
    async decide(recorded, facts) {
      try {
        const current = readNotifyState(recorded);
        const outcomeFacts = factsOf(facts);
        const resolved = needsPolicy(current, outcomeFacts)
          ? await policies.resolve(facts.subject)
          : undefined;
        const policy: Policy = resolved?.policy ?? policies.light(facts.subject);
        const hold = holdAt(policy, facts.atMs);
        const blocking =
          resolved && !outcomeFacts.ok && policy.dependsOn.length
            ? await parents.blocking(facts.subject, policy.dependsOn)
            : undefined;
        const due = (current?.outbox.length ?? 0) + 3;
        const spanMs = leaseSpanMs([{ channels: [...config.channels.keys()] }], config) * due;
        const lease = facts.holder ? { holder: facts.holder, untilMs: facts.atMs + spanMs } : undefined;
        const decision = decideTransition(current, outcomeFacts, resolved?.policy, {
          ...(lease ? { lease } : {}),
          ...(hold ? { hold } : {}),
          ...(blocking?.by ? { blockedBy: blocking.by } : {}),
        });
        let next: NotifyState | undefined = decision.state;
        // Older notifications that are due (their holder died, or their backoff ran out) go with this
        // write's holder too: delivered by it after the write, without a write of their own to claim them.
        if (
          lease &&
          next?.outbox.some(
            (n) => deliverableBy(n, lease.holder, facts.atMs) && n.lease?.holder !== lease.holder,
          )
        )
          next = { ...next, outbox: leaseDue(next.outbox, lease, facts.atMs) };
        if (resolved && next) {
          const all = [...resolved.problems, ...(blocking?.problems ?? [])];
          const problems = all.length ? all.slice(0, 5) : undefined;
          if (JSON.stringify(problems) !== JSON.stringify(next.problems))
            next = { ...withoutProblems(next), ...(problems ? { problems } : {}) };
          for (const problem of all) ports.log.warn('notification policy problem', { problem });
        }
        if (decision.transition !== 'none' || decision.suppressed)
          ports.log.info('alert transition', {
            check: `${facts.subject.namespace}/${facts.subject.name}`,
            transition: decision.transition,
            ...(decision.suppressed ? { suppressed: decision.suppressed } : {}),
            ...(decision.suppressed === 'blocked' && blocking?.by ? { blockedBy: blocking.by[0] } : {}),
            ...(hold && decision.queued.length ? { heldUntil: new Date(hold.untilMs).toISOString() } : {}),
            ...(decision.queued.length
              ? { notifications: decision.queued.map((q) => `${q.id} → ${q.channels.join(',')}`) }
              : {}),
          });
        return next === current ? recorded : withNotifyState(recorded, next);
      } catch (error) {
        ports.log.error('could not decide the alert transition; the outcome is recorded without it', {
          error: error instanceof Error ? error.message : String(error),
        });
        return recorded;
      }
    },
    pending(written, holder) {
      return leasedTo(readNotifyState(written), holder, ports.clock.nowMs()).length > 0;
    },
    async afterWrite(store, written, facts) {
      try {
        const state = readNotifyState(written);
        const { namespace, name } = written.metadata;
        if (facts.holder) {
          const mine = leasedTo(state, facts.holder, ports.clock.nowMs());
          if (mine.length) {
            const untilMs = Math.min(...mine.map((n) => n.lease?.untilMs ?? 0));
            const results = await deliverPass(deps, { namespace, name }, mine, untilMs);
            await settlePass(deps, store, written, results, facts.holder);
          }
        }
        if (state && !facts.outcome.ok && facts.runUuid) await renew(state, written.metadata, facts);
      } catch (error) {
        ports.log.error('notification delivery failed unexpectedly; the tick retries it', {
          error: error instanceof Error ? error.message : String(error),
        });
      }
    },
  };

  /**
   * A failing run that queued nothing: Alertmanager's alert moves its endsAt ahead. The flapping alert
   * while flapping, else the firing incident once announced (not quiet, not held by a silence).
   */
  async function renew(state: NotifyState, ref: { namespace: string; name: string }, facts: RecordedFacts) {
    if (state.outbox.some((n) => n.id.startsWith(keyOf(facts.runUuid)))) return;
    const f = factsOf(facts);
    const held = state.outbox.some((n) => n.event === 'firing' && n.incident === state.incident && n.held);
    const target = state.flapping
      ? {
          event: 'flapping' as const,
          incident: state.flapping.incident,
          channels: state.flapping.channels,
          severity: state.flapping.severity,
          sinceMs: state.flapping.sinceMs,
          renewMs: state.flapping.windowMs + renewMsOf(f.runIntervalMs),
        }
      : state.alert === 'firing' && state.incident && !state.quiet && !held
        ? {
            event: 'reminder' as const,
            incident: state.incident,
            channels: state.channels ?? [],
            severity: state.severity ?? 'error',
            sinceMs: state.sinceMs ?? f.atMs,
            renewMs: renewMsOf(f.runIntervalMs),
          }
        : undefined;
    for (const name of target?.channels ?? []) {
      const channel = config.channels.get(name);
      if (!target || channel?.type !== 'alertmanager' || !budget.take()) continue;
      const verdict = await send(deps, channel, {
        ...target,
        id: `${keyOf(facts.runUuid)}-renewal`,
        kind: f.kind,
        outcome: f.outcome,
        ...(f.error ? { error: f.error } : {}),
        run: facts.runUuid.slice(0, 8),
        failures: f.consecutiveFailures,
        atMs: f.atMs,
        channels: [name],
        attempts: 0,
        nextAtMs: f.atMs,
        namespace: ref.namespace,
        name: ref.name,
      });
      if (verdict.kind !== 'delivered')
        ports.log.warn('could not renew the firing alert at Alertmanager', { channel: name, verdict });
    }
  }
}

function withoutProblems(s: NotifyState): NotifyState {
  const { problems: _, ...rest } = s;
  return rest;
}

function factsOf(facts: RecordedFacts): OutcomeFacts {
  const error = facts.outcome.ok ? undefined : facts.outcome.errors.find((e) => e.trim() !== '');
  return {
    kind: facts.subject.kind as KindName,
    outcome: facts.outcome.kind,
    ok: facts.outcome.ok,
    skipped: facts.outcome.kind === 'Skipped',
    ...(error ? { error } : {}),
    runUuid: facts.runUuid || randomUUID(),
    atMs: facts.atMs,
    consecutiveFailures: facts.consecutiveFailures,
    runIntervalMs: facts.runIntervalMs,
  };
}
