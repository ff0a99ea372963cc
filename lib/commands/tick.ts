import type { Clock } from '../core/clock.ts';
import type { IdSource } from '../core/ids.ts';
import type { Log } from '../core/log.ts';
import { escapeControls } from '../core/terminal-text.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { NotifyConfig } from '../notify/config.ts';
import { fetchSender } from '../notify/http.ts';
import type { Dispatcher } from '../schedule/dispatcher.ts';
import type { DueTimings } from '../schedule/due.ts';
import type { TickEntry } from '../schedule/tick-entry.ts';
import { runTick } from '../tick/tick.ts';
import type { TickKube } from '../tick/tick-port.ts';
import { formatDocument } from './document.ts';

export interface TickCommandOptions {
  kube: TickKube;
  dispatcher: Dispatcher;
  scope: NamespaceScope;
  identity: string;
  timings?: DueTimings;
  /** Dispatch checks a Kuberhealthy runs too (KHRUN_TAKE_OVER). */
  takeOver?: boolean;
  /** The most khchecks per runner invocation, and the most requests in flight (tick-options.ts). */
  batchSize?: number;
  concurrency?: number;
  /** The tick's batch token (two ticks never name a batch alike). */
  ids?: IdSource;
  /** The API server's (kube/server-clock.ts): due times are compared with times other machines wrote. */
  clock: Clock;
  output: 'text' | 'json' | 'yaml';
  log: Log;
  write: (line: string) => void;
  /** Notifications: the outboxes the tick sweeps after dispatching (lib/notify/sweep.ts). */
  notify?: NotifyConfig;
}

/** One line per check: what the tick decided and what it sent; an API error's text shown escaped. */
export function describeEntry(e: TickEntry, nowMs: number): string {
  return escapeControls(entryLine(e, nowMs));
}

function entryLine(e: TickEntry, nowMs: number): string {
  switch (e.result) {
    case 'dispatched':
      return `${e.check}: dispatched ${e.ref} (${e.decision.reason})`;
    case 'failed':
      return `${e.check}: dispatch FAILED (${e.error})`;
    case 'refused':
      return `${e.check}: refused: ${e.error}`;
    case 'lost':
      return `${e.check}: dispatched by another tick${e.ref ? ` (${e.ref})` : ''}`;
    case 'not-due': {
      const next = e.decision.due ? 0 : e.decision.nextCheckMs;
      return `${e.check}: ${e.decision.reason} (next look in ${Math.max(0, Math.round((next - nowMs) / 1000))}s)`;
    }
  }
}

/** `khrun tick`: exit 0 when every due check was dispatched (or taken by another tick), 1 when a dispatch failed. */
export async function tickCommand(opts: TickCommandOptions): Promise<number> {
  const entries = await runTick(
    {
      kube: opts.kube,
      dispatcher: opts.dispatcher,
      clock: opts.clock,
      log: opts.log,
      ids: opts.ids,
      ...(opts.notify ? { notify: { config: opts.notify, http: fetchSender } } : {}),
    },
    {
      scope: opts.scope,
      identity: opts.identity,
      timings: opts.timings,
      takeOver: opts.takeOver,
      batchSize: opts.batchSize,
      concurrency: opts.concurrency,
    },
  );
  const nowMs = opts.clock.nowMs();
  if (opts.output !== 'text') opts.write(formatDocument({ entries }, opts.output));
  else {
    for (const e of entries) opts.write(describeEntry(e, nowMs));
    const sent = entries.filter((e) => e.result === 'dispatched').length;
    opts.write(`tick: ${entries.length} checks, ${sent} dispatched`);
  }
  return entries.some((e) => e.result === 'failed') ? 1 : 0;
}
