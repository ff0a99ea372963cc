import type { Clock } from '../core/clock.ts';
import { type IdSource, randomIds } from '../core/ids.ts';
import { type Limiter, limiter } from '../core/limit.ts';
import type { Log } from '../core/log.ts';
import { type ClaimResult, claimDispatch } from './claim-check.ts';
import type { Dispatcher } from './dispatcher.ts';
import { releaseClaim } from './release-claim.ts';
import type { TickEntry } from './tick-entry.ts';
import type { DueObject } from './tick-kind.ts';

/** The most claims and dispatches a tick has in flight at once (KHRUN_TICK_CONCURRENCY). */
export const DEFAULT_TICK_CONCURRENCY = 32;
/**
 * The most khchecks one runner invocation drives (KHRUN_BATCH_SIZE); 1: an invocation per check. 50, the
 * most a runner starts at once (BATCH_CONCURRENCY): at 1,000 checks due at once on the local node, 20
 * runners of 50 had every outcome recorded after 110 s against 136 s for 40 runners of 25 (each runner a
 * Node process and a pod beside the checkers; the fleet bench, khrun row alone, n=1 each).
 */
export const DEFAULT_BATCH_SIZE = 50;

/** The due objects cut into batches of at most size, in the order given (sorted by the tick). Pure. */
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
 * The one claim → send → release path, for every kind: claims the due objects in their claim stores and,
 * once every claim is written (barrier), sends them, at most `concurrency` requests in flight. With a batch size above 1 (and a dispatcher with
 * a batch form) the due list is cut into batches before any claim, each batch is named, and each member's
 * claim records that name; the members another tick claimed first drop out
 * ('lost'), a batch left empty is not sent, a batch of one planned member is sent as a single run. A
 * failed send gives every member's claim back, each only if still ours. A claim whose write fails (other
 * than by conflicts) fails that object alone. Entries come back in the order of `due`.
 */
export async function dispatchDue<S>(
  deps: Deps,
  due: readonly DueObject<S>[],
  s: Settings,
): Promise<TickEntry[]> {
  const limit = limiter(s.concurrency);
  const batchForm = s.batchSize > 1 ? deps.dispatcher.batch : undefined;
  const batches = planBatches(due, batchForm ? s.batchSize : 1);
  const token = (deps.ids ?? randomIds)
    .runUuid()
    .replace(/[^0-9a-f]/g, '')
    .slice(0, 6);
  const claimsDone = barrier(batches.length);
  const sent = await Promise.all(
    batches.map((members, index) =>
      batchForm && members.length > 1
        ? sendBatch(deps, { limit, claimsDone }, s, members, batchForm, batchId(token, index))
        : sendSingle(deps, { limit, claimsDone }, s, members[0]!),
    ),
  );
  return sent.flat();
}

/**
 * Resolves for everyone once all `count` have arrived: every claim of the tick is written before its first
 * runner is sent. Sent early, a thousand checks' runners start while the tick still claims, and their
 * requests and process starts slow the rest of the claims (the tick took 20-24 s at 1,000 that way, about
 * 8 s claiming first: docs/performance.md); the last batch is sent after the last claim either way.
 */
function barrier(count: number): { arrive(): Promise<void> } {
  let left = count;
  let open!: () => void;
  const all = new Promise<void>((resolve) => {
    open = resolve;
  });
  if (left === 0) open();
  return {
    arrive() {
      left -= 1;
      if (left === 0) open();
      return all;
    },
  };
}

/** The tick's request slots, and the point after which its sends may start. */
interface Lanes {
  limit: Limiter;
  claimsDone: { arrive(): Promise<void> };
}

const claim = <S>(
  deps: Deps,
  limit: Limiter,
  s: Settings,
  d: DueObject<S>,
  refAt: (nowMs: number) => string,
) =>
  limit(() =>
    claimDispatch(deps, {
      store: d.store,
      label: d.label,
      listed: d.listed,
      decide: d.decide,
      refAt,
      maxAttempts: s.maxAttempts,
      identity: s.identity,
    }),
  ).catch((error: unknown): { kind: 'error'; error: string } => ({ kind: 'error', error: firstLine(error) }));

type Unclaimed = Exclude<ClaimResult, { kind: 'claimed' }> | { kind: 'error'; error: string };

/** The entry of an object that was not claimed: another tick has it, or its claim's write failed. */
function unclaimed<S>(d: DueObject<S>, r: Unclaimed): TickEntry {
  if (r.kind === 'error') return { check: d.label, decision: d.first, result: 'failed', error: r.error };
  const decision = r.decision ?? d.first;
  return { check: d.label, decision, result: 'lost', ...(r.ref ? { ref: r.ref } : {}) };
}

type Claimed = Extract<ClaimResult, { kind: 'claimed' }>;

/** Releases a claim after a failed send; the entry says the send failed whatever the release does. */
const giveBack = <S>(limit: Limiter, d: DueObject<S>, r: Claimed) =>
  limit(() => releaseClaim(d.store, r.claim)).catch(() => undefined);

async function sendSingle<S>(deps: Deps, lanes: Lanes, s: Settings, d: DueObject<S>): Promise<TickEntry[]> {
  const { limit } = lanes;
  const r = await claim(deps, limit, s, d, (nowMs) => deps.dispatcher.refFor(d.send, nowMs));
  const ready = lanes.claimsDone.arrive();
  if (r.kind !== 'claimed') return [unclaimed(d, r)];
  const { ref } = r.claim;
  await ready;
  try {
    await limit(() => deps.dispatcher.dispatch(d.send, ref), 'first');
    deps.log.info('dispatched', { check: d.label, ref, reason: r.decision.reason });
    return [{ check: d.label, decision: r.decision, result: 'dispatched', ref }];
  } catch (error) {
    const message = firstLine(error);
    deps.log.error('dispatch failed', { check: d.label, ref, error: message });
    await giveBack(limit, d, r);
    return [{ check: d.label, decision: r.decision, result: 'failed', ref, error: message }];
  }
}

async function sendBatch<S>(
  deps: Deps,
  lanes: Lanes,
  s: Settings,
  members: readonly DueObject<S>[],
  form: NonNullable<Dispatcher['batch']>,
  id: string,
): Promise<TickEntry[]> {
  const { limit } = lanes;
  const ref = form.refFor(id, deps.clock.nowMs());
  const claims = await Promise.all(members.map((d) => claim(deps, limit, s, d, () => ref)));
  const ready = lanes.claimsDone.arrive();
  const won = members.flatMap((d, i) => {
    const r = claims[i]!;
    return r.kind === 'claimed' ? [{ d, r }] : [];
  });
  // Every member's entry, in the batch's order: the claimed ones as `sent` says, the others as they were.
  const entries = (sent: (d: DueObject<S>, r: Claimed) => TickEntry) =>
    members.map((d, i) => {
      const r = claims[i]!;
      return r.kind === 'claimed' ? sent(d, r) : unclaimed(d, r);
    });
  // Every member went to another tick (or failed its claim): nothing to send.
  if (won.length === 0) return members.map((d, i) => unclaimed(d, claims[i] as Unclaimed));
  await ready;
  try {
    await limit(
      () =>
        form.dispatch(
          won.map((w) => w.d.send),
          ref,
        ),
      'first',
    );
    deps.log.info('dispatched batch', { ref, checks: won.length, of: members.length });
    return entries((d, r) => ({ check: d.label, decision: r.decision, result: 'dispatched', ref }));
  } catch (error) {
    const message = firstLine(error);
    deps.log.error('batch dispatch failed; claims given back', { ref, checks: won.length, error: message });
    await Promise.all(won.map(({ d, r }) => giveBack(limit, d, r)));
    return entries((d, r) => ({
      check: d.label,
      decision: r.decision,
      result: 'failed',
      ref,
      error: message,
    }));
  }
}
