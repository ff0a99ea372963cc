import { formatMsAsGoDuration } from '../core/duration.ts';
import type { KindName } from '../core/run-target.ts';
import type { QueuedNotification } from '../state/notify-state.ts';

/** Whether a notice closes what it is about at the receivers (an incident resolved, flapping settled). */
export const closes = (n: Pick<QueuedNotification, 'event'>) =>
  n.event === 'resolved' || n.event === 'settled';

/** A queued notification with the object it is about: what every channel renders. */
export interface Notice extends QueuedNotification {
  namespace: string;
  name: string;
}

/** What each channel's text is made of, the same words everywhere. */
export interface MessageParts {
  /** `[FIRING] khcheck team-a/dns is failing: Failed 3 times in a row` */
  title: string;
  /** Label/value lines: error, run, since, status page. */
  facts: Array<{ label: string; value: string }>;
  statusUrl?: string;
}

const NOUN: Record<KindName, string> = { khcheck: 'khcheck', khjob: 'khjob', healthcheck: 'HealthCheck' };

const iso = (ms: number) => new Date(ms).toISOString();

/** A link to the check on the status page, when one is configured (its `?check=` filter). */
export function statusLink(base: string | undefined, n: Pick<Notice, 'namespace' | 'name'>) {
  if (!base) return undefined;
  const url = new URL(base);
  url.searchParams.set('check', `${n.namespace}/${n.name}`);
  return url.toString();
}

/** The words of a notice: which check, of which kind, what happened, the error, the run, since when. */
export function messageParts(n: Notice, statusPageUrl?: string): MessageParts {
  const what = `${NOUN[n.kind]} ${n.namespace}/${n.name}`;
  const times = n.failures === 1 ? 'once' : `${n.failures} times in a row`;
  const window = n.windowMs ? formatMsAsGoDuration(n.windowMs) : '';
  const title =
    n.event === 'resolved'
      ? `[RESOLVED] ${what} recovered: ${n.outcome}`
      : n.event === 'reminder'
        ? `[FIRING] ${what} is still failing: ${n.outcome} ${times}`
        : n.event === 'flapping'
          ? `[FLAPPING] ${what} changed state ${n.flaps ?? 0} times within ${window}: no more notices until it is stable for ${window}`
          : n.event === 'settled'
            ? `[SETTLED] ${what} stopped flapping: ${n.alert === 'firing' ? 'failing' : 'OK'}`
            : `[FIRING] ${what} is failing: ${n.outcome} ${times}`;
  const statusUrl = statusLink(statusPageUrl, n);
  const facts: MessageParts['facts'] = [];
  if (n.error) facts.push({ label: 'Error', value: n.error });
  facts.push({
    label: n.event === 'flapping' || n.event === 'settled' ? 'Last outcome' : 'Outcome',
    value: n.outcome,
  });
  facts.push({ label: 'Run', value: n.run });
  if (n.event === 'flapping' || n.event === 'settled')
    facts.push({ label: 'Flapping since', value: iso(n.sinceMs) });
  else
    facts.push({ label: n.event === 'resolved' ? 'Failing from' : 'Failing since', value: iso(n.sinceMs) });
  if (n.event === 'resolved') facts.push({ label: 'Resolved at', value: iso(n.atMs) });
  if (n.held)
    facts.push({
      label: 'Held',
      value: 'decided during a silence or maintenance window, sent when it ended',
    });
  if (statusUrl) facts.push({ label: 'Status page', value: statusUrl });
  return { title, facts, ...(statusUrl ? { statusUrl } : {}) };
}

/** Plain text: the title, then one `Label: value` line per fact. */
export function plainText(parts: MessageParts): string {
  return [parts.title, ...parts.facts.map((f) => `${f.label}: ${f.value}`)].join('\n');
}
