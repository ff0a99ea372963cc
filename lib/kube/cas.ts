import type { Log } from '../core/log.ts';
import type { KhState } from '../state/resources.ts';
import { statusCodeOf, WriteConflict } from './errors.ts';
import type { StateWriteIntent } from './port.ts';

/**
 * A compare-and-swap loop gave up: every attempt's write met a newer resourceVersion. The object is left
 * as the last winner wrote it; the caller decides what that means (a runner exits 1 and leaves its run to
 * the next invocation, a report endpoint answers 500 so the client retries).
 */
export class RetriesExhausted extends Error {
  override readonly name = 'RetriesExhausted';
  constructor(
    /** Which loop gave up ('claim', 'record', 'report', ...): the same name as in its logs and user agent. */
    readonly writer: string,
    readonly attempts: number,
    /** What was being written, for the message: `kuberhealthy/my-check`. */
    readonly target: string,
    options: { cause: unknown },
  ) {
    super(`${writer} of ${target} gave up after ${attempts} write conflicts in a row`, options);
  }
}

/** What a decision asks of the loop: write this next version, or stop with a value (nothing to write). */
export type CasStep<T, R> =
  | { kind: 'write'; next: T; onWritten: (written: T) => R | Promise<R> }
  | { kind: 'done'; value: R };

export const write = <T, R>(next: T, onWritten: (written: T) => R | Promise<R>): CasStep<T, R> => ({
  kind: 'write',
  next,
  onWritten,
});
export const done = <T, R>(value: R): CasStep<T, R> => ({ kind: 'done', value });

export interface CasLoop<T, R> {
  /** Names the loop in logs, in the RetriesExhausted error and in the write's user agent. */
  writer: string;
  /** `namespace/name` of the object, for messages. */
  target: string;
  maxAttempts: number;
  /** Reads the current version (null: it does not exist). */
  read: () => Promise<T | null>;
  /**
   * The version the caller already holds and may write on without reading first (attempt 1 only); a
   * conflict, or the object gone since, then reads as usual. Omit it to read first.
   */
  initial?: T | null;
  /** Decides from the current version; may do side work (list pods) before asking for the write. */
  decide: (current: T | null, attempt: number) => CasStep<T, R> | Promise<CasStep<T, R>>;
  /** Writes with current's resourceVersion as precondition (create when current is null); WriteConflict on 409. */
  persist: (next: T, current: T | null) => Promise<T>;
  log?: Log;
}

/**
 * Read → decide → write with the resourceVersion as precondition, re-reading and deciding again on a
 * conflict, at most maxAttempts times. One helper for every such loop, so the bound, the logging of each
 * conflict (writer and attempt, for the fault suite to attribute) and the final error are the same
 * everywhere. Errors other than WriteConflict propagate at once.
 */
export async function updateWithRetry<T, R>(loop: CasLoop<T, R>): Promise<R> {
  let lastConflict: unknown;
  for (let attempt = 1; attempt <= loop.maxAttempts; attempt++) {
    const held = attempt === 1 && loop.initial !== undefined;
    const current = held ? (loop.initial as T | null) : await loop.read();
    const step: CasStep<T, R> = await loop.decide(current, attempt);
    if (step.kind !== 'write') return step.value;
    const { next, onWritten } = step;
    try {
      const written = await loop.persist(next, current);
      return await onWritten(written);
    } catch (error) {
      // A held version whose object was deleted since is as stale as one someone wrote over: read again.
      if (!(error instanceof WriteConflict) && !(held && current && isGone(error))) throw error;
      lastConflict = error;
      loop.log?.debug('write conflicted; reading again', {
        writer: loop.writer,
        attempt,
        target: loop.target,
      });
    }
  }
  throw new RetriesExhausted(loop.writer, loop.maxAttempts, loop.target, { cause: lastConflict });
}

/** The object is gone (404), as the API server or a fake of it says so. */
function isGone(error: unknown): boolean {
  return statusCodeOf(error) === 404 || (error as { code?: unknown } | null)?.code === 404;
}

/** The khstate writes a CAS loop needs; KubePort and the tick's port both have them. */
export interface KhStateStore {
  readState(namespace: string, name: string): Promise<KhState | null>;
  createState(state: KhState, writer?: string, intent?: StateWriteIntent): Promise<KhState>;
  replaceState(state: KhState, writer?: string, intent?: StateWriteIntent): Promise<KhState>;
}

/**
 * updateWithRetry on one khstate: reads it from store, creates it when decide writes on a missing one,
 * else replaces it with the resourceVersion as precondition; every write carries the loop's name (for the
 * audit log) and its intent (for the store: 'update' unless the loop says otherwise).
 */
export function updateKhStateWithRetry<R>(
  store: KhStateStore,
  ref: { namespace: string; name: string },
  loop: Pick<CasLoop<KhState, R>, 'writer' | 'maxAttempts' | 'decide' | 'initial' | 'log'> & {
    intent?: StateWriteIntent;
  },
): Promise<R> {
  const intent = loop.intent ?? 'update';
  return updateWithRetry({
    ...loop,
    target: `${ref.namespace}/${ref.name}`,
    read: () => store.readState(ref.namespace, ref.name),
    persist: (next, current) =>
      current ? store.replaceState(next, loop.writer, intent) : store.createState(next, loop.writer, intent),
  });
}
