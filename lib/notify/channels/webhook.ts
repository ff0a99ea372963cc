import { createHmac, timingSafeEqual } from 'node:crypto';
import { type ChannelRequest, JSON_HEADERS, type RenderRequest } from '../channel.ts';
import { messageParts, plainText } from '../message.ts';

/** The generic webhook's headers (docs/alerts.md documents them and the body). */
export const WEBHOOK_HEADERS = {
  /** The notification's idempotency key: the same on every retry of it, unique between notifications. */
  id: 'idempotency-key',
  event: 'x-khrun-event',
  /** Unix seconds when this request was signed. */
  timestamp: 'x-khrun-timestamp',
  /** `v1=` and hex HMAC-SHA256 over `<timestamp>.<body>` with the channel's secret. */
  signature: 'x-khrun-signature',
} as const;

/** The body's schema version; a change that is not an addition makes the next. */
export const WEBHOOK_SCHEMA_VERSION = 1;

/** The signature of a body sent at a time: hex HMAC-SHA256 of `<unix seconds>.<body>`. */
export function webhookSignature(secret: string, timestampS: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestampS}.${body}`).digest('hex')}`;
}

/**
 * What a receiver checks (and the tests do): the signature matches the body and the timestamp it names,
 * and the timestamp is within toleranceS of now, so a captured request cannot be replayed later. Within
 * the tolerance, a receiver drops repeats by the idempotency key.
 */
export function verifyWebhook(
  secret: string,
  headers: { timestamp: string | undefined; signature: string | undefined },
  body: string,
  opts: { nowMs: number; toleranceS?: number },
): boolean {
  const ts = Number(headers.timestamp);
  if (!Number.isInteger(ts) || !headers.signature) return false;
  if (Math.abs(opts.nowMs / 1000 - ts) > (opts.toleranceS ?? 300)) return false;
  const want = Buffer.from(webhookSignature(secret, ts, body));
  const got = Buffer.from(headers.signature);
  return want.length === got.length && timingSafeEqual(want, got);
}

/**
 * The generic webhook: a JSON body of schema version 1 (docs/alerts.md), signed with the channel's secret
 * (when it has one) over the timestamp and the body.
 */
export const webhookRequest: RenderRequest = (channel, n, ctx): ChannelRequest => {
  const parts = messageParts(n, ctx.statusPageUrl);
  const body = JSON.stringify({
    version: WEBHOOK_SCHEMA_VERSION,
    id: n.id,
    incident: n.incident,
    event: n.event,
    check: { kind: n.kind, namespace: n.namespace, name: n.name },
    outcome: { kind: n.outcome, ...(n.error ? { error: n.error } : {}) },
    run: n.run,
    failures: n.failures,
    since: new Date(n.sinceMs).toISOString(),
    at: new Date(n.atMs).toISOString(),
    ...(n.flaps !== undefined ? { flaps: n.flaps } : {}),
    ...(n.windowMs !== undefined ? { windowSeconds: n.windowMs / 1000 } : {}),
    ...(n.alert ? { alert: n.alert } : {}),
    ...(n.held ? { held: true } : {}),
    title: parts.title,
    text: plainText(parts),
    ...(parts.statusUrl ? { statusUrl: parts.statusUrl } : {}),
  });
  const timestampS = Math.floor(ctx.nowMs / 1000);
  return {
    url: channel.url,
    headers: {
      ...JSON_HEADERS,
      [WEBHOOK_HEADERS.id]: n.id,
      [WEBHOOK_HEADERS.event]: n.event,
      [WEBHOOK_HEADERS.timestamp]: String(timestampS),
      ...(channel.secret
        ? { [WEBHOOK_HEADERS.signature]: webhookSignature(channel.secret, timestampS, body) }
        : {}),
    },
    body,
  };
};
