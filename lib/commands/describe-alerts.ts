import { escapeControls as safe } from '../core/terminal-text.ts';
import { formatWindow, parseMaintenance } from '../notify/maintenance.ts';
import { POLICY_ANNOTATION_PREFIX } from '../notify/policy.ts';
import { alertsCell, holdOfRow, type RowAlerts, rowAlertsOf, uptimeCell } from './status-alerts.ts';
import { humanDuration, paint } from './table.ts';

/**
 * `khrun describe`'s alerting fields: availability, the silence or maintenance window in force (from the
 * check object, else the state's record), the alert, the parent holding failures back, the policy's
 * problems and pending notifications. Nothing when the check has neither uptime nor notify state nor a
 * notify.khrun.dev annotation.
 */
export function describeAlerts(
  check: { metadata: { annotations?: Record<string, string> } } | null,
  state: { metadata: { annotations?: Record<string, string> } } | null,
  opts: { nowMs: number; color: boolean },
): string[] {
  const a: RowAlerts = rowAlertsOf(check, state);
  const policy = Object.keys(a.annotations ?? {}).some((k) => k.startsWith(POLICY_ANNOTATION_PREFIX));
  if (!a.uptime && !a.notify && !policy) return [];
  const out: string[] = [];
  const field = (label: string, value: string) => out.push(`${`${label}:`.padEnd(15)}${value}`);
  if (a.uptime) field('Uptime', `${uptimeCell(a, opts.nowMs)} (24h / 7d / 30d, share of OK results)`);
  const hold = holdOfRow(a, opts.nowMs);
  if (hold) {
    const until = new Date(hold.untilMs).toISOString().replace('.000Z', 'Z');
    const what = hold.source === 'silence' ? 'Silenced' : 'Maintenance';
    const who = hold.by ? `, by ${hold.by}` : '';
    field(
      what,
      paint(
        safe(
          `until ${until} (${humanDuration(hold.untilMs - opts.nowMs)})${hold.reason ? `: ${hold.reason}` : ''}${who}`,
        ),
        'yellow',
        opts.color,
      ),
    );
  }
  const windows = parseMaintenance(a.annotations?.[`${POLICY_ANNOTATION_PREFIX}maintenance`] ?? '');
  if (windows.ok && windows.value.length) field('Windows', safe(windows.value.map(formatWindow).join('; ')));
  const alerts = alertsCell(
    { ...a, annotations: {}, notify: a.notify && { ...a.notify, hold: undefined } },
    opts.nowMs,
  );
  if (alerts !== '-') field('Alert', safe(alerts));
  const n = a.notify;
  if (n?.outbox.length)
    field(
      'Notifications',
      safe(
        n.outbox
          .map(
            (e) =>
              `${e.event} → ${e.channels.join(',')}${e.held || e.nextAtMs > opts.nowMs ? ` (from ${new Date(e.nextAtMs).toISOString()})` : ''}${e.lastError ? `: ${e.lastError}` : ''}`,
          )
          .join('; '),
      ),
    );
  for (const p of n?.problems ?? []) out.push(paint(`  ! ${safe(p)}`, 'yellow', opts.color));
  return out;
}
