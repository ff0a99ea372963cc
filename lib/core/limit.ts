/**
 * Runs tasks with at most `max` in flight; the rest wait in order. A task marked `first` goes ahead of the
 * waiting ones (the tick's sends, ahead of the releases of claims whose sends failed; a run's lease
 * renewals); one marked `last` waits behind every unmarked one, in its own order (a batch's claims, behind
 * the pod creates and records of the runs already claimed). A task's rejection is its caller's: it frees
 * its slot like a success.
 *
 * Tasks of one limiter must not await each other: a task that awaited other tasks of the same limiter
 * while holding a slot could wait forever once every slot is held that way. So the tick's and the API
 * client's limiters take only leaf work (one API request, or a short fixed sequence of them), and a batch's
 * checks (each a whole run) take slots of a limiter of their own.
 */
export interface Limiter {
  <T>(task: () => Promise<T>, place?: Placement): Promise<T>;
  /** Tasks running now (for tests and logs). */
  readonly active: number;
  /** Tasks waiting for a slot (for tests and logs). */
  readonly waiting: number;
}

/** Where a task waits when every slot is held: ahead of the others or behind them; unplaced, in turn. */
export type Placement = 'first' | 'last';

export function limiter(max: number): Limiter {
  if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`limiter: max must be ≥ 1, got ${max}`);
  let active = 0;
  const waiting: Array<() => void> = [];
  const behind: Array<() => void> = [];
  // A finished task hands its slot straight to the next waiter, so a caller arriving in between cannot
  // take it too and exceed max.
  const release = () => {
    const next = waiting.shift() ?? behind.shift();
    if (next) next();
    else active--;
  };
  const run = async <T>(task: () => Promise<T>, place?: Placement): Promise<T> => {
    if (active < max) active++;
    else
      await new Promise<void>((resolve) => {
        if (place === 'first') waiting.unshift(resolve);
        else if (place === 'last') behind.push(resolve);
        else waiting.push(resolve);
      });
    try {
      return await task();
    } finally {
      release();
    }
  };
  return Object.defineProperties(run, {
    active: { get: () => active },
    waiting: { get: () => waiting.length + behind.length },
  }) as Limiter;
}
