import { createHash } from 'node:crypto';
import { readDispatchClaim } from '../state/dispatch-claim.ts';
import { readActiveRun, readLastOutcome } from '../state/khstate.ts';
import type { KhState } from '../state/resources.ts';

export interface DueTimings {
  /** How often the tick runs; a check is due half a period early so the tick nearest its time sends it. */
  tickPeriodMs: number;
  /** How long a dispatched invocation has to start its run before the check may be dispatched again. */
  dispatchTtlMs: number;
  /** Upper bound of the stable per-check delay of a first run, which spreads checks created together. */
  maxFirstRunJitterMs: number;
}

export const DEFAULT_DUE_TIMINGS: DueTimings = {
  tickPeriodMs: 60_000,
  dispatchTtlMs: 5 * 60_000,
  maxFirstRunJitterMs: 60_000,
};

export type DueDecision =
  | { due: true; reason: 'never-run' | 'interval-passed' | 'adopt-abandoned' | 'close-stale' }
  | { due: false; reason: 'running' | 'dispatched' | 'not-yet'; nextCheckMs: number };

export interface DueInput {
  /** Stable identity for the jitter: the khcheck's uid (or namespace/name). */
  key: string;
  runIntervalMs: number;
  /** The khcheck's creationTimestamp, anchoring a first run. */
  createdAtMs: number;
  state: KhState | null;
  nowMs: number;
  timings?: DueTimings;
}

/** A stable fraction in [0, 1) per key: the same check always gets the same offset. */
export function stableFraction(key: string): number {
  return createHash('sha256').update(key).digest().readUInt32BE(0) / 2 ** 32;
}

/**
 * Whether a check is due for a new invocation, from its khstate alone (pure).
 *
 * - A live run (lease and deadline in the future) is left alone.
 * - A dispatch not yet followed by a run start is pending until dispatchTtlMs passes.
 * - A run whose runner let go (lease expired) or that is past its deadline is due at once: the dispatched
 *   runner adopts or closes it.
 * - Otherwise the check is due runIntervalMs after its anchor, less half a tick: the anchor is the dispatch
 *   that led to the last run (so a pod's start-up time does not make the interval drift), else the last
 *   run's start (a manual run counts), else an expired dispatch (a failed attempt counts as an attempt).
 * - A check that never ran is due at creation plus a stable jitter of up to a quarter of its interval
 *   (capped at maxFirstRunJitterMs, a minute by default), so checks applied together are spread over two
 *   ticks and keep that spacing afterwards, each anchored on its own dispatches.
 */
export function decideDue(input: DueInput): DueDecision {
  const t = input.timings ?? DEFAULT_DUE_TIMINGS;
  const { nowMs, state } = input;
  const run = readActiveRun(state);
  const lastOutcome = readLastOutcome(state);
  const dispatch = readDispatchClaim(state);
  const lastStartMs = Math.max(run?.startedAtMs ?? -Infinity, lastOutcome?.startedAtMs ?? -Infinity);
  const started = Number.isFinite(lastStartMs);

  if (run && nowMs < run.deadlineMs && nowMs < run.leaseUntilMs) {
    return { due: false, reason: 'running', nextCheckMs: run.leaseUntilMs };
  }
  const pending =
    dispatch && (!started || dispatch.atMs > lastStartMs) && nowMs < dispatch.atMs + t.dispatchTtlMs;
  if (pending) return { due: false, reason: 'dispatched', nextCheckMs: dispatch.atMs + t.dispatchTtlMs };
  if (run) return { due: true, reason: nowMs >= run.deadlineMs ? 'close-stale' : 'adopt-abandoned' };

  let anchorMs: number | undefined;
  if (started) {
    const ledToLastRun =
      dispatch && dispatch.atMs <= lastStartMs && lastStartMs - dispatch.atMs < t.dispatchTtlMs;
    anchorMs = ledToLastRun ? dispatch.atMs : lastStartMs;
    if (dispatch && dispatch.atMs > lastStartMs) anchorMs = dispatch.atMs;
  } else if (dispatch) {
    anchorMs = dispatch.atMs;
  }
  if (anchorMs === undefined) {
    const jitterMs = Math.floor(
      stableFraction(input.key) * Math.min(input.runIntervalMs / 4, t.maxFirstRunJitterMs),
    );
    const dueMs = input.createdAtMs + jitterMs;
    return nowMs >= dueMs
      ? { due: true, reason: 'never-run' }
      : { due: false, reason: 'not-yet', nextCheckMs: dueMs };
  }
  const earlyMs = Math.min(t.tickPeriodMs / 2, input.runIntervalMs / 4);
  const dueMs = anchorMs + input.runIntervalMs - earlyMs;
  return nowMs >= dueMs
    ? { due: true, reason: 'interval-passed' }
    : { due: false, reason: 'not-yet', nextCheckMs: dueMs };
}
