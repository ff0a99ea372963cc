import { limiter } from '../core/limit.ts';
import { type Log, logWithKeys } from '../core/log.ts';
import { loggableError } from '../kube/errors.ts';
import type { RunTimings } from '../run/assess.ts';
import { CheckNotFoundError } from '../run/errors.ts';
import { openSession, type Session, type SessionSettings } from '../session/session.ts';
import { BATCH_CONCURRENCY, type BatchEntry } from './batch-entry.ts';
import { type BatchCheckResult, batchTally, type CheckOutcome } from './batch-result.ts';

export interface BatchRunDeps {
  /** The session every check runs in: one API client, one report endpoint (lib/session/session.ts). */
  session: Pick<Session, 'run'>;
  log: Log;
  /** The invocation's: SIGTERM, or the end of its time budget. Every check's own signal follows it. */
  signal: AbortSignal;
  /** At most this many checks at once (default BATCH_CONCURRENCY); the rest wait for a slot. */
  concurrency?: number;
  timings?: RunTimings;
  onPhase?: (check: BatchEntry, phase: string, extra?: Record<string, unknown>) => void;
}

/**
 * Runs every check of a batch as a full iteration of its own (claim, pod, deadline, outcome) in one session,
 * at most `concurrency` at once, and returns one result per check in the list's order. Whatever one check
 * does (throws, hangs to its timeout, conflicts past its bound, is missing) is that check's result: the
 * others' runs go on. Each run has its own signal, aborted when the invocation's is, and its own log lines
 * naming the check. Never throws for a check; a batch stopped midway leaves each claimed run in its khstate
 * for the next invocation to adopt, as a single run does.
 */
export async function runBatch(
  deps: BatchRunDeps,
  checks: readonly BatchEntry[],
): Promise<BatchCheckResult[]> {
  const running = new Set<AbortController>();
  // One listener on the invocation's signal for the whole batch, not one per check (200 would warn).
  const stopAll = () => {
    for (const c of running) c.abort(deps.signal.reason);
  };
  deps.signal.addEventListener('abort', stopAll, { once: true });
  const slots = limiter(Math.max(1, Math.min(deps.concurrency ?? BATCH_CONCURRENCY, checks.length)));
  let results: BatchCheckResult[];
  try {
    // runOne never throws, so every check gets its result and the list keeps its order.
    results = await Promise.all(
      checks.map((check) => slots(async () => ({ check, outcome: await runOne(deps, check, running) }))),
    );
  } finally {
    deps.signal.removeEventListener('abort', stopAll);
  }
  deps.log.info('batch finished', { checks: checks.length, results: batchTally(results) });
  return results;
}

async function runOne(
  deps: BatchRunDeps,
  check: BatchEntry,
  running: Set<AbortController>,
): Promise<CheckOutcome> {
  const log = logWithKeys(deps.log, { check: check.name, namespace: check.namespace });
  if (deps.signal.aborted) {
    const reason = `not started: the invocation was stopped first (${String(deps.signal.reason)})`;
    log.warn('batch check not started', { reason });
    return { kind: 'not-started', reason };
  }
  const own = new AbortController();
  running.add(own);
  try {
    const result = await deps.session.run({
      target: { kind: 'khcheck', namespace: check.namespace, name: check.name },
      signal: own.signal,
      timings: deps.timings,
      log,
      onPhase: deps.onPhase && ((phase, extra) => deps.onPhase?.(check, phase, extra)),
    });
    return { kind: 'ran', result };
  } catch (error) {
    if (error instanceof CheckNotFoundError) return { kind: 'not-found', reason: error.message };
    log.error('batch check failed', { error: loggableError(error) });
    const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    return { kind: 'failed', error: message };
  } finally {
    running.delete(own);
  }
}

/**
 * A whole batch invocation: opens one runner session over the batch's namespaces (one API client, one report
 * endpoint, the khstates and checker pods of each namespace read together: kube/shared-reads.ts), runs every
 * check in it (runBatch) and closes it once every run returned. `khrun run` with many
 * checks and the runCheck Lambda's batch event both start here. Throws only when the session cannot start.
 */
export async function runBatchInSession(
  opts: SessionSettings & Omit<BatchRunDeps, 'session'>,
  checks: readonly BatchEntry[],
): Promise<BatchCheckResult[]> {
  const perNamespace = new Map<string, number>();
  for (const c of checks) perNamespace.set(c.namespace, (perNamespace.get(c.namespace) ?? 0) + 1);
  const session = await openSession({
    ...opts,
    namespaces: [...perNamespace.keys()],
    sharedReadsFor: perNamespace,
  });
  try {
    return await runBatch({ ...opts, session }, checks);
  } finally {
    await session.close();
  }
}
