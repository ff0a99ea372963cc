import type { Clock } from '../core/clock.ts';
import { type IdSource, randomIds } from '../core/ids.ts';
import { type Limiter, limiter } from '../core/limit.ts';
import type { Log } from '../core/log.ts';
import type { KhStateStore } from '../kube/cas.ts';
import type { KhState } from '../state/resources.ts';
import { type ClaimResult, claimCheck } from './claim-check.ts';
import type { Dispatcher } from './dispatcher.ts';
import type { DueDecision } from './due.ts';
import { releaseClaim } from './release-claim.ts';
import type { CheckRef } from './run-job.ts';
import type { TickEntry } from './tick-entry.ts';

/** The most claims and dispatches a tick has in flight at once (KHRUN_TICK_CONCURRENCY). */
export const DEFAULT_TICK_CONCURRENCY = 32;
/** The most khchecks one runner invocation drives (KHRUN_BATCH_SIZE); 1: an invocation per check. */
export const DEFAULT_BATCH_SIZE = 25;

/** A khcheck the tick found due: what to send, its listed khstate, and how to decide again after a conflict. */
export interface DueCheck {
  /** `namespace/name`, as in the tick's entries. */
  label: string;
  target: CheckRef;
  listed: KhState | null;
  decide: (state: KhState | null) => DueDecision;
}

/** The due checks cut into batches of at most size, in the order given (sorted by the tick). Pure. */
export function planBatches<T>(due: readonly T[], size: number): T[][] {
  if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`batch size must be ≥ 1, got ${size}`);
  const batches: T[][] = [];
  for (let i = 0; i < due.length; i += size) batches.push(due.slice(i, i + size));
  return batches;
}

/**
 * A batch's id, unique to this tick: a random token (two ticks may share an identity and a second, as two
 * `khrun tick` on one host do) and the batch's place in the tick. The dispatcher makes the ref from it.
 */
export const batchId = (token: string, index: number) => `${token}-${index}`;

interface Deps {
  kube: KhStateStore;
  dispatcher: Dispatcher;
  clock: Clock;
  log: Log;
  /** For the tick's batch token; default random. */
  ids?: IdSource;
}

interface Settings {
  identity: string;
  maxAttempts: number;
  batchSize: number;
  concurrency: number;
}

const firstLine = (error: unknown) =>
  error instanceof Error ? error.message.split('\n')[0]! : String(error);

/**
 * Claims and sends the due khchecks, at most `concurrency` requests in flight. With a batch size above 1
 * (and a dispatcher with a batch form) the due list is cut into batches before any claim, each batch is
 * named, and each member's claim records that name; the members another tick claimed first drop out
 * ('lost'), a batch left empty is not sent, a batch of one planned member is sent as a single run. A
 * failed send gives every member's claim back. Entries come back in the order of `due`.
 */
export async function dispatchDue(deps: Deps, due: readonly DueCheck[], s: Settings): Promise<TickEntry[]> {
  const limit = limiter(s.concurrency);
  const batchForm = s.batchSize > 1 ? deps.dispatcher.batch : undefined;
  const batches = planBatches(due, batchForm ? s.batchSize : 1);
  const token = (deps.ids ?? randomIds)
    .runUuid()
    .replace(/[^0-9a-f]/g, '')
    .slice(0, 6);
  const sent = await Promise.all(
    batches.map((members, index) =>
      batchForm && members.length > 1
        ? sendBatch(deps, limit, s, members, batchForm, batchId(token, index))
        : sendSingle(deps, limit, s, members[0]!),
    ),
  );
  return sent.flat();
}

const claim = (deps: Deps, limit: Limiter, s: Settings, d: DueCheck, refAt: (nowMs: number) => string) =>
  limit(() =>
    claimCheck(deps, {
      namespace: d.target.namespace,
      name: d.target.name,
      listed: d.listed,
      decide: d.decide,
      refAt,
      maxAttempts: s.maxAttempts,
      identity: s.identity,
    }),
  ).catch((error: unknown): { kind: 'error'; error: string } => ({ kind: 'error', error: firstLine(error) }));

type Unclaimed = Exclude<ClaimResult, { kind: 'claimed' }> | { kind: 'error'; error: string };

/** The entry of a check that was not claimed: another tick has it, or its claim's write failed. */
function unclaimed(d: DueCheck, r: Unclaimed): TickEntry {
  if (r.kind === 'error') {
    return { check: d.label, decision: d.decide(d.listed), result: 'failed', error: r.error };
  }
  return { check: d.label, decision: r.decision, result: 'lost', ...(r.ref ? { ref: r.ref } : {}) };
}

async function sendSingle(deps: Deps, limit: Limiter, s: Settings, d: DueCheck): Promise<TickEntry[]> {
  const r = await claim(deps, limit, s, d, (nowMs) => deps.dispatcher.refFor(d.target, nowMs));
  if (r.kind !== 'claimed') return [unclaimed(d, r)];
  const { ref } = r.claim;
  try {
    await limit(() => deps.dispatcher.dispatch(d.target, ref), { first: true });
    deps.log.info('dispatched', { check: d.label, ref, reason: r.decision.reason });
    return [{ check: d.label, decision: r.decision, result: 'dispatched', ref }];
  } catch (error) {
    const message = firstLine(error);
    deps.log.error('dispatch failed', { check: d.label, ref, error: message });
    await limit(() => releaseClaim(deps.kube, d.target.namespace, d.target.name, r.claim)).catch(
      () => undefined,
    );
    return [{ check: d.label, decision: r.decision, result: 'failed', ref, error: message }];
  }
}

async function sendBatch(
  deps: Deps,
  limit: Limiter,
  s: Settings,
  members: readonly DueCheck[],
  form: NonNullable<Dispatcher['batch']>,
  id: string,
): Promise<TickEntry[]> {
  const ref = form.refFor(id, deps.clock.nowMs());
  const claims = await Promise.all(members.map((d) => claim(deps, limit, s, d, () => ref)));
  const won = members.flatMap((d, i) => {
    const r = claims[i]!;
    return r.kind === 'claimed' ? [{ d, r }] : [];
  });
  // Every member's entry, in the batch's order: the claimed ones as `sent` says, the others as they were.
  const entries = (sent: (d: DueCheck, r: Extract<ClaimResult, { kind: 'claimed' }>) => TickEntry) =>
    members.map((d, i) => {
      const r = claims[i]!;
      return r.kind === 'claimed' ? sent(d, r) : unclaimed(d, r);
    });
  // Every member went to another tick (or failed its claim): nothing to send.
  if (won.length === 0) return members.map((d, i) => unclaimed(d, claims[i] as Unclaimed));
  try {
    await limit(
      () =>
        form.dispatch(
          won.map((w) => w.d.target),
          ref,
        ),
      { first: true },
    );
    deps.log.info('dispatched batch', { ref, checks: won.length, of: members.length });
    return entries((d, r) => ({ check: d.label, decision: r.decision, result: 'dispatched', ref }));
  } catch (error) {
    const message = firstLine(error);
    deps.log.error('batch dispatch failed; claims given back', { ref, checks: won.length, error: message });
    await Promise.all(
      won.map(({ d, r }) =>
        limit(() => releaseClaim(deps.kube, d.target.namespace, d.target.name, r.claim)).catch(
          () => undefined,
        ),
      ),
    );
    return entries((d, r) => ({
      check: d.label,
      decision: r.decision,
      result: 'failed',
      ref,
      error: message,
    }));
  }
}
