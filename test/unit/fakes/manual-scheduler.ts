import type { Clock } from '../../../lib/core/clock.ts';
import type { CancelScheduled, Scheduler } from '../../../lib/core/scheduler.ts';

interface Entry {
  dueMs: number;
  seq: number;
  callback: () => void;
}

/** Lets every promise chain the callbacks started settle (the fake API server answers in microtasks). */
export const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A scheduler and clock the test drives: it records every delay asked for and runs callbacks only when
 * told, moving its clock to their due time. No global timer is touched.
 */
export class ManualScheduler implements Scheduler, Clock {
  /** Every delay asked for, in order, cancelled ones included. */
  readonly requestedMs: number[] = [];
  private queue: Entry[] = [];
  private seq = 0;

  constructor(private now = 0) {}

  nowMs(): number {
    return this.now;
  }

  schedule(callback: () => void, delayMs: number): CancelScheduled {
    this.requestedMs.push(delayMs);
    const entry = { dueMs: this.now + delayMs, seq: this.seq++, callback };
    this.queue.push(entry);
    return () => {
      this.queue = this.queue.filter((e) => e !== entry);
    };
  }

  /** Callbacks scheduled and neither run nor cancelled. */
  get pending(): number {
    return this.queue.length;
  }

  /** The delays of the pending callbacks, from now, soonest first. */
  get pendingInMs(): number[] {
    return this.sorted().map((e) => e.dueMs - this.now);
  }

  /** Runs the soonest pending callback (moving the clock to its due time) and lets what it started settle. */
  async runNext(): Promise<void> {
    const next = this.sorted()[0];
    if (!next) throw new Error('nothing is scheduled');
    this.queue = this.queue.filter((e) => e !== next);
    this.now = Math.max(this.now, next.dueMs);
    next.callback();
    await settle();
  }

  /** Moves the clock by ms, running every callback due by then in order, letting each one settle. */
  async advanceByMs(ms: number): Promise<void> {
    const untilMs = this.now + ms;
    for (let next = this.sorted()[0]; next && next.dueMs <= untilMs; next = this.sorted()[0]) {
      await this.runNext();
    }
    this.now = untilMs;
    await settle();
  }

  private sorted(): Entry[] {
    return [...this.queue].sort((a, b) => a.dueMs - b.dueMs || a.seq - b.seq);
  }
}
