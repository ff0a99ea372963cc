import type { Notice } from './message.ts';

/** The receivers khrun sends to, one file each under channels/. */
export const CHANNEL_TYPES = ['alertmanager', 'webhook', 'slack', 'pagerduty', 'teams'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/**
 * One configured channel: its type and where it sends, with its secrets (a URL that is itself a secret,
 * a routing key, an HMAC key) as the notification configuration gave them (files, a Secret in the
 * environment, SSM): never from a check's spec or annotations, which only name a channel.
 */
export interface ChannelConfig {
  name: string;
  type: ChannelType;
  url: string;
  /** Per-request timeout. */
  timeoutMs: number;
  /** Only checks in these namespaces may use it; undefined: any. */
  namespaces?: readonly string[];
  /** webhook: the HMAC-SHA256 key of its signature header. */
  secret?: string;
  /** pagerduty: the Events API v2 integration (routing) key. */
  routingKey?: string;
}

/** One HTTP request a channel makes: JSON, POST. */
export interface ChannelRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** What a channel renders for each notice, with the time of sending and the status page. */
export interface RenderContext {
  nowMs: number;
  statusPageUrl?: string;
}

/** A channel type: how a notice becomes its request. Pure (a webhook's signature included). */
export type RenderRequest = (channel: ChannelConfig, notice: Notice, ctx: RenderContext) => ChannelRequest;

/** How a receiver's answer is taken: done, refused for good (do not retry), or failed for now. */
export type Verdict =
  | { kind: 'delivered' }
  | { kind: 'rejected'; status: number }
  | { kind: 'failed'; error: string };

/**
 * The answer classified by status code: 2xx delivered; 408, 425, 429 and 5xx failed for now (PagerDuty's
 * and Slack's documented retry advice); any other status refused for good (a bad payload or URL, which a
 * retry cannot fix).
 */
export function verdictOf(status: number, body: string): Verdict {
  if (status >= 200 && status < 300) return { kind: 'delivered' };
  if (status === 408 || status === 425 || status === 429 || status >= 500)
    return { kind: 'failed', error: `HTTP ${status}${body ? ` ${body.slice(0, 120)}` : ''}` };
  return { kind: 'rejected', status };
}

export const JSON_HEADERS = { 'content-type': 'application/json' } as const;
