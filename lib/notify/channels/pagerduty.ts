import { truncateChars } from '../../core/text.ts';
import { type ChannelRequest, JSON_HEADERS, type RenderRequest } from '../channel.ts';
import { closes, messageParts } from '../message.ts';

/** PagerDuty's Events API v2 endpoint: the channel's default URL. */
export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue';

// PagerDuty Events API v2 (PagerDuty developer docs, "Send an Alert Event", events-API-v2/02-Trigger-Events):
// routing_key and event_action (trigger, acknowledge, resolve) are required; dedup_key (at most 255
// characters) correlates a trigger with its resolve; a trigger's payload needs summary (at most 1024
// characters), source and severity (critical, error, warning, info). 202 is accepted; 400 is not to be
// retried; 429 and 5xx are ("Response Codes & Retry Logic").

const SUMMARY_MAX_CHARS = 1024;

/** The incident's dedup_key: one PagerDuty alert per incident, its reminders re-trigger it, its resolve closes it. */
export const dedupKeyOf = (n: { kind: string; namespace: string; name: string; incident: string }) =>
  truncateChars(`khrun/${n.kind}/${n.namespace}/${n.name}/${n.incident}`, 255, '');

export const pagerDutyRequest: RenderRequest = (channel, n, ctx): ChannelRequest => {
  const dedupKey = dedupKeyOf(n);
  const routingKey = channel.routingKey ?? '';
  const url = channel.url || PAGERDUTY_EVENTS_URL;
  if (closes(n))
    return {
      url,
      headers: { ...JSON_HEADERS },
      body: JSON.stringify({ routing_key: routingKey, event_action: 'resolve', dedup_key: dedupKey }),
    };
  const parts = messageParts(n, ctx.statusPageUrl);
  return {
    url,
    headers: { ...JSON_HEADERS },
    body: JSON.stringify({
      routing_key: routingKey,
      event_action: 'trigger',
      dedup_key: dedupKey,
      payload: {
        summary: truncateChars(parts.title, SUMMARY_MAX_CHARS),
        source: `${n.namespace}/${n.name}`,
        severity: n.severity,
        timestamp: new Date(n.atMs).toISOString(),
        component: n.name,
        group: n.namespace,
        class: n.outcome,
        custom_details: Object.fromEntries(parts.facts.map((f) => [f.label, f.value])),
      },
      client: 'khrun',
      ...(parts.statusUrl
        ? { client_url: parts.statusUrl, links: [{ href: parts.statusUrl, text: 'Status page' }] }
        : {}),
    }),
  };
};
