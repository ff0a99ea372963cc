import type { KindName, RunTarget } from '../core/run-target.ts';
import type { KhState } from '../state/resources.ts';
import type { ClaimStore } from './claim-store.ts';
import type { DueDecision } from './due.ts';
import type { CheckRef } from './run-job.ts';

/** The khstates the tick listed, by `namespace/name`: the claim of a khcheck or khjob starts from one. */
export type ListedStates = ReadonlyMap<string, KhState>;

/**
 * What the tick's loop (lib/tick/tick.ts) needs from one kind of object. T is the kind's item (its object, with
 * whatever the adapter works out once per object); S is the version the kind's dispatch claim is read
 * from and written on. Every function but claims is pure.
 */
export interface TickKind<T, S> {
  kind: KindName;
  /** Whether due objects of this kind may share one runner invocation (the dispatcher's batch form). */
  batches: boolean;
  /** The kind's objects in scope, as the tick listed them, in any order. */
  objects: readonly T[];
  /** What the object is; targetLabel of it names it in the tick's entries and logs. */
  target(item: T): RunTarget;
  /** The object's annotations (its notify.khrun.dev/depends-on orders a tick's dispatch: parents first). */
  annotations?(item: T): Readonly<Record<string, string>> | undefined;
  /** The version of the claim's object the tick listed (null: none yet); the claim starts from it. */
  listed(item: T, states: ListedStates): S | null;
  /** Whether the object is due on a version of its state; undefined: the tick does not list it at all. */
  decide(item: T, state: S | null, nowMs: number): DueDecision | undefined;
  /** The khstate (or khstate view) the Kuberhealthy guard reads, from a listed version. */
  guardView(listed: S | null): KhState | null;
  /** What the dispatcher sends for the object. */
  send(item: T): CheckRef;
  /** Where the object's dispatch claim is kept. */
  claims(target: RunTarget): ClaimStore<S>;
}

/** One object the loop found due, as the claim → send → release path (dispatch-due.ts) takes it. */
export interface DueObject<S> {
  /** targetLabel of the object, as in the tick's entries. */
  label: string;
  send: CheckRef;
  listed: S | null;
  /** The decision on the listed version (due). */
  first: DueDecision;
  /** The kind's decision on a version read after a conflict, at the time it is made. */
  decide: (state: S | null) => DueDecision | undefined;
  store: ClaimStore<S>;
}

/**
 * A TickKind with its item and state types kept to itself, so kinds of different types share one list:
 * `with` hands the kind to a function generic in both.
 */
export interface AnyTickKind {
  with<R>(use: <T, S>(kind: TickKind<T, S>) => R): R;
}

export const anyTickKind = <T, S>(kind: TickKind<T, S>): AnyTickKind => ({ with: (use) => use(kind) });
