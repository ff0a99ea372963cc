import type { RunRef } from '../report/report-token.ts';

/** A report as it reached this process's endpoint: what the checker pod sent, and when it arrived. */
export interface DeliveredReport {
  ok: boolean;
  errors: string[];
  atMs: number;
}

/**
 * What the run waiting for a report did with it. 'recorded': the run's outcome was written from it (the
 * endpoint answers 200 only then, so a report is never acknowledged and lost). 'declined': the run did not
 * take it (it is no longer this invocation's, it has an outcome already, its write failed): the report then
 * goes the way of any other, stored in the khstate, where whoever holds the run finds it.
 */
export type Delivery = 'recorded' | 'declined';

export type ReportReceiver = (report: DeliveredReport) => Promise<Delivery>;

/**
 * Where the report endpoint a runner process hosts hands a report to the run it is for, when that run is
 * being waited for in the same process: the run records its outcome from it in one write, instead of the
 * endpoint storing it in the khstate (a read and a write) and the run then recording it (another read and
 * write) after noticing it through a khstate watch. Routed by run UUID, so one inbox serves every run of a
 * session at once.
 */
export interface ReportInbox {
  /** Hands reports for run to receiver until the returned function is called. */
  open(run: RunRef, receiver: ReportReceiver): () => void;
  /** 'absent': no run of this process waits for it (an adopted run's report, a finished one's). */
  deliver(run: RunRef, report: DeliveredReport): Promise<Delivery | 'absent'>;
}

export function reportInbox(): ReportInbox {
  const waiting = new Map<string, { run: RunRef; receiver: ReportReceiver }>();
  return {
    open(run, receiver) {
      const entry = { run, receiver };
      waiting.set(run.uuid, entry);
      return () => {
        if (waiting.get(run.uuid) === entry) waiting.delete(run.uuid);
      };
    },
    async deliver(run, report) {
      const entry = waiting.get(run.uuid);
      // The URL names the run's check too (signed with it): a report for another check's run is not this one's.
      if (!entry || entry.run.namespace !== run.namespace || entry.run.checkName !== run.checkName)
        return 'absent';
      return entry.receiver(report);
    },
  };
}

/** A run's place in the inbox, taken before its pod exists, so a report never arrives before it. */
export interface HeldReports {
  /**
   * Hands reports to receiver, those that came meanwhile first, until the returned function is called;
   * from then on (or after close) reports are declined.
   */
  attach(receiver: ReportReceiver): () => void;
  /** Stops taking reports for the run; any still waiting for a receiver are declined. */
  close(): void;
}

/**
 * Opens run's place in the inbox now, while the receiver (the wait for the run's outcome) starts only once
 * the pod was created: a quick pod's report waits for it instead of missing it.
 */
export function holdReports(inbox: ReportInbox, run: RunRef): HeldReports {
  let receiver: ReportReceiver | undefined;
  let closed = false;
  const queued: Array<{ report: DeliveredReport; answer: (delivery: Delivery) => void }> = [];
  const hand = (to: ReportReceiver, report: DeliveredReport): Promise<Delivery> =>
    to(report).catch((): Delivery => 'declined');
  const close = () => {
    closed = true;
    receiver = undefined;
    unregister();
    for (const q of queued.splice(0)) q.answer('declined');
  };
  const unregister = inbox.open(run, (report) => {
    if (closed) return Promise.resolve('declined');
    if (receiver) return hand(receiver, report);
    return new Promise((answer) => queued.push({ report, answer }));
  });
  return {
    attach(to) {
      if (closed) return () => {};
      receiver = to;
      for (const q of queued.splice(0)) void hand(to, q.report).then(q.answer);
      return close;
    },
    close,
  };
}
