import { type Hold, holdAt } from '../notify/hold.ts';
import { lightPolicy } from '../notify/policy-source.ts';
import { type NotifyState, readNotifyState } from '../state/notify-state.ts';
import { availability, formatAvailability, readUptime, type Uptime } from '../state/uptime.ts';
import { humanDuration } from './table.ts';

/**
 * What `khrun status` and `describe` show of a check's alerting, kept raw on its row (the cells are made
 * at the time of printing): the check object's annotations (its silence and windows: the truth, at once),
 * and the state's uptime buckets and notify state (the silence in force at its last decision, when the
 * cluster's or namespace's defaults set one the check object does not).
 */
export interface RowAlerts {
  annotations?: Readonly<Record<string, string>>;
  uptime?: Uptime;
  notify?: NotifyState;
}

type Annotated = { metadata: { annotations?: Record<string, string> } } | null | undefined;

export function rowAlertsOf(check: Annotated, state: Annotated): RowAlerts {
  const annotations = check?.metadata.annotations;
  const uptime = readUptime(state);
  const notify = readNotifyState(state);
  return {
    ...(annotations ? { annotations } : {}),
    ...(uptime ? { uptime } : {}),
    ...(notify ? { notify } : {}),
  };
}

/** The silence or window holding the check's notifications at nowMs: the check's own, else its state's record. */
export function holdOfRow(a: RowAlerts | undefined, nowMs: number): Hold | undefined {
  if (!a) return undefined;
  const own = holdAt(lightPolicy({ defaults: {} }, a.annotations), nowMs);
  if (own) return own;
  const recorded = a.notify?.hold;
  return recorded && recorded.untilMs > nowMs ? recorded : undefined;
}

/** `99.95%/99.90%/98.12%` over 24h, 7d and 30d; `-` where nothing was recorded. */
export function uptimeCell(a: RowAlerts | undefined, nowMs: number): string {
  return (['24h', '7d', '30d'] as const)
    .map((w) => formatAvailability(availability(a?.uptime, w, nowMs)))
    .join('/');
}

/** `silenced 1h59m: db migration (alice); firing`; `-` when there is nothing to say. */
export function alertsCell(a: RowAlerts | undefined, nowMs: number): string {
  const parts: string[] = [];
  const hold = holdOfRow(a, nowMs);
  if (hold)
    parts.push(
      `${hold.source === 'silence' ? 'silenced' : 'maintenance'} ${humanDuration(hold.untilMs - nowMs)}${hold.reason && hold.source === 'silence' ? `: ${hold.reason}` : ''}${hold.by ? ` (${hold.by})` : ''}`,
    );
  const n = a?.notify;
  if (n?.flapping) parts.push('flapping');
  else if (n?.alert === 'firing') parts.push(n.quiet ? 'firing (not announced)' : 'firing');
  if (n?.blocked && n.alert === 'ok') parts.push(`held back by ${n.blocked.by[0]}`);
  return parts.join('; ') || '-';
}
