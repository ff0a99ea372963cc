import type { Clock } from '../core/clock.ts';
import {
  boundsOf,
  DATE_RESOLUTION_MS,
  estimateOffset,
  keepBounds,
  type OffsetBounds,
  type OffsetEstimate,
  parseHttpDate,
  serverNowMs,
} from '../core/server-time.ts';

/** Where a ServerClock stands: synced once a response with a `Date` was seen. */
export interface ClockReading {
  synced: boolean;
  /** Local wall clock minus the API server's (positive: the local clock is ahead). */
  skewMs?: number;
  /** How far the API server's time as read here may be off, at most. */
  uncertaintyMs?: number;
  samples: number;
}

/**
 * The API server's time: what every decision compares with times other machines wrote (leases, deadlines,
 * due times, the stamps of reports and outcomes). A local wall clock that agrees with the server's within
 * what the responses can tell is read as it is; one that does not is replaced by the server's time, which
 * advances with the local monotonic clock between responses (core/server-time.ts).
 */
export interface ServerClock extends Clock {
  /** Feeds one API server response: when its request left and its headers arrived, and its `Date`. */
  observe(sample: { sentMonoMs: number; receivedMonoMs: number; date: string | null | undefined }): void;
  /** The local monotonic clock samples are taken on. */
  monoMs(): number;
  reading(): ClockReading;
}

export interface ServerClockOptions {
  monoMs?: () => number;
  /** The local wall clock: read as it is before the first response and while the responses agree with it. */
  wallMs?: () => number;
  /** Told once when the skew goes beyond warnSkewMs (khrun works on regardless: it decides by server time). */
  onSkew?: (skewMs: number) => void;
  warnSkewMs?: number;
}

const KEEP = { maxKept: 32, maxAgeMs: 10 * 60_000 };

/**
 * A ServerClock fed by responses (see kube/timed-client.ts); a client object holds one (kube-client.ts). Before the first response it reads the local
 * wall clock: every engine reads the API server before it decides anything by time, so that reading is
 * only ever taken for the arrival of a report at an endpoint that has not talked to the API server yet.
 */
export function serverClock(opts: ServerClockOptions = {}): ServerClock {
  const monoMs = opts.monoMs ?? (() => performance.now());
  const wallMs = opts.wallMs ?? Date.now;
  const warnSkewMs = opts.warnSkewMs ?? 2_000;
  let kept: OffsetBounds[] = [];
  let estimate: OffsetEstimate | undefined;
  let lastMs = Number.NEGATIVE_INFINITY;
  let warned = false;
  const clock: ServerClock = {
    monoMs,
    nowMs() {
      if (!estimate) return wallMs();
      const ms = serverNowMs(estimate, monoMs(), wallMs());
      // A refined estimate may move time back by up to the Date resolution; time read here does not go back.
      lastMs = ms < lastMs && lastMs - ms <= DATE_RESOLUTION_MS ? lastMs : ms;
      return lastMs;
    },
    observe({ sentMonoMs, receivedMonoMs, date }) {
      const serverDateMs = parseHttpDate(date);
      if (serverDateMs === undefined || receivedMonoMs < sentMonoMs) return;
      kept = keepBounds(kept, boundsOf({ sentMonoMs, receivedMonoMs, serverDateMs }), KEEP);
      estimate = estimateOffset(kept);
      const skewMs = clock.reading().skewMs ?? 0;
      if (!warned && Math.abs(skewMs) > warnSkewMs) {
        warned = true;
        opts.onSkew?.(skewMs);
      }
    },
    reading() {
      if (!estimate) return { synced: false, samples: 0 };
      return {
        synced: true,
        skewMs: wallMs() - (monoMs() + estimate.offsetMs),
        uncertaintyMs: estimate.uncertaintyMs,
        samples: estimate.samples,
      };
    },
  };
  return clock;
}
