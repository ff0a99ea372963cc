import { type ChannelRequest, JSON_HEADERS, type RenderRequest } from '../channel.ts';
import { closes, messageParts, plainText } from '../message.ts';

/** The alert's name at Alertmanager: route on it (`alertname="KhrunCheckFailing"`). */
export const ALERT_NAME = 'KhrunCheckFailing';
/** A flapping check's alert (its flapping notice fires it, its settling resolves it). */
export const FLAPPING_ALERT_NAME = 'KhrunCheckFlapping';

/**
 * Alertmanager's API v2, `POST /api/v2/alerts` (the body is a list of postable alerts: labels,
 * annotations, startsAt, endsAt, generatorURL). The labels name the incident (`khrun_incident`), so a
 * firing, its renewals and its resolution are one alert there, and a repeated post is idempotent. Firing:
 * endsAt `renewMs` ahead, renewed by every failing run and reminder (a runner that stops renewing lets it
 * resolve by itself, as Prometheus does); resolved: endsAt is when it resolved.
 */
export const alertmanagerRequest: RenderRequest = (channel, n, ctx): ChannelRequest => {
  const parts = messageParts(n, ctx.statusPageUrl);
  const resolved = closes(n);
  const flapping = n.event === 'flapping' || n.event === 'settled';
  const alert = {
    labels: {
      alertname: flapping ? FLAPPING_ALERT_NAME : ALERT_NAME,
      namespace: n.namespace,
      check: n.name,
      khrun_kind: n.kind,
      severity: n.severity,
      khrun_incident: n.incident,
    },
    annotations: {
      summary: parts.title,
      description: plainText(parts),
      ...(n.error ? { error: n.error } : {}),
      run: n.run,
      outcome: n.outcome,
    },
    startsAt: new Date(n.sinceMs).toISOString(),
    endsAt: new Date(resolved ? n.atMs : ctx.nowMs + n.renewMs).toISOString(),
    ...(parts.statusUrl ? { generatorURL: parts.statusUrl } : {}),
  };
  return {
    url: `${channel.url.replace(/\/+$/, '')}/api/v2/alerts`,
    headers: { ...JSON_HEADERS, 'idempotency-key': n.id },
    body: JSON.stringify([alert]),
  };
};
