import { describe, expect, it } from 'vitest';
import type { ChannelConfig, ChannelType } from '../../lib/notify/channel.ts';
import { verdictOf } from '../../lib/notify/channel.ts';
import { ALERT_NAME } from '../../lib/notify/channels/alertmanager.ts';
import { RENDERERS } from '../../lib/notify/channels/index.ts';
import { dedupKeyOf } from '../../lib/notify/channels/pagerduty.ts';
import { verifyWebhook, WEBHOOK_HEADERS } from '../../lib/notify/channels/webhook.ts';
import type { Notice } from '../../lib/notify/message.ts';
import type { AlertEvent } from '../../lib/state/notify-state.ts';
import {
  khrunWebhookSchema,
  pagerDutySchema,
  type SchemaCheck,
  slackSchema,
  teamsSchema,
} from '../helpers/receiver-schemas.ts';

const T0 = Date.UTC(2026, 11, 3, 10, 0, 0);
const ctx = { nowMs: T0 + 60_000, statusPageUrl: 'https://status.example.com/' };

function notice(event: AlertEvent, over: Partial<Notice> = {}): Notice {
  return {
    id: `abc-${event}`,
    incident: 'inc0123456789abcdef0',
    event,
    kind: 'healthcheck',
    outcome: event === 'resolved' ? 'Succeeded' : 'Failed',
    severity: 'critical',
    ...(event === 'resolved' ? {} : { error: 'dns lookup of <db> & "cache" failed' }),
    run: 'deadbeef',
    failures: event === 'resolved' ? 0 : 3,
    sinceMs: T0 - 20 * 60_000,
    atMs: T0,
    renewMs: 40 * 60_000,
    channels: ['x'],
    attempts: 0,
    nextAtMs: T0,
    namespace: 'team-a',
    name: 'dns',
    ...over,
  };
}

const channel = (type: ChannelType, over: Partial<ChannelConfig> = {}): ChannelConfig => ({
  name: 'x',
  type,
  url: 'http://127.0.0.1:9/hook',
  timeoutMs: 1000,
  ...(type === 'pagerduty' ? { routingKey: 'R0123456789abcdef0123456789abcde' } : {}),
  ...(type === 'webhook' ? { secret: 'a-secret-of-32-characters-long!!' } : {}),
  ...over,
});

const EVENTS: AlertEvent[] = ['firing', 'reminder', 'resolved'];
const SCHEMAS: Array<[ChannelType, SchemaCheck]> = [
  ['slack', slackSchema],
  ['pagerduty', pagerDutySchema],
  ['teams', teamsSchema],
  ['webhook', khrunWebhookSchema],
];

describe('each channel renders what its provider documents', () => {
  for (const [type, schema] of SCHEMAS)
    it.each(EVENTS)(`${type}: %s`, (event) => {
      const req = RENDERERS[type](channel(type), notice(event), ctx);
      expect(schema(JSON.parse(req.body))).toEqual([]);
      expect(req.headers['content-type']).toBe('application/json');
    });

  it('every text names the check, its namespace and kind, the outcome, the error, the run and the status page', () => {
    for (const [type] of SCHEMAS) {
      const body = RENDERERS[type](channel(type), notice('firing'), ctx).body;
      for (const want of [
        'team-a/dns',
        'HealthCheck',
        'Failed',
        'deadbeef',
        'status.example.com',
        'dns lookup of',
      ])
        expect(body, `${type} has ${want}`).toContain(want);
    }
  });

  it('escapes mrkdwn in Slack text (an error cannot make a link or a mention)', () => {
    const body = JSON.parse(RENDERERS.slack(channel('slack'), notice('firing'), ctx).body);
    expect(body.blocks[0].text.text).toContain('&lt;db&gt; &amp;');
  });

  it('PagerDuty: trigger and resolve share the incident dedup_key; severity from the policy', () => {
    const trigger = JSON.parse(RENDERERS.pagerduty(channel('pagerduty'), notice('firing'), ctx).body);
    const resolve = JSON.parse(RENDERERS.pagerduty(channel('pagerduty'), notice('resolved'), ctx).body);
    expect(trigger).toMatchObject({
      event_action: 'trigger',
      payload: { severity: 'critical', source: 'team-a/dns' },
    });
    expect(resolve).toEqual({
      routing_key: 'R0123456789abcdef0123456789abcde',
      event_action: 'resolve',
      dedup_key: trigger.dedup_key,
    });
    expect(trigger.dedup_key).toBe(dedupKeyOf(notice('firing')));
  });

  it('Alertmanager: one alert per incident; firing ends renewMs ahead, resolved ends when it resolved', () => {
    const firing = RENDERERS.alertmanager(
      channel('alertmanager', { url: 'http://am:9093/' }),
      notice('firing'),
      ctx,
    );
    const resolved = RENDERERS.alertmanager(channel('alertmanager'), notice('resolved'), ctx);
    expect(firing.url).toBe('http://am:9093/api/v2/alerts');
    const [f] = JSON.parse(firing.body);
    const [r] = JSON.parse(resolved.body);
    expect(f.labels).toEqual(r.labels);
    expect(f.labels).toMatchObject({
      alertname: ALERT_NAME,
      namespace: 'team-a',
      check: 'dns',
      khrun_incident: 'inc0123456789abcdef0',
      severity: 'critical',
    });
    expect(f.endsAt).toBe(new Date(ctx.nowMs + 40 * 60_000).toISOString());
    expect(r.endsAt).toBe(new Date(T0).toISOString());
    expect(f.generatorURL).toBe('https://status.example.com/?check=team-a%2Fdns');
  });

  it('webhook: signed over timestamp and body, replay-safe, with the idempotency key', () => {
    const req = RENDERERS.webhook(channel('webhook'), notice('firing'), ctx);
    const secret = 'a-secret-of-32-characters-long!!';
    const headers = {
      timestamp: req.headers[WEBHOOK_HEADERS.timestamp],
      signature: req.headers[WEBHOOK_HEADERS.signature],
    };
    expect(req.headers[WEBHOOK_HEADERS.id]).toBe('abc-firing');
    expect(verifyWebhook(secret, headers, req.body, { nowMs: ctx.nowMs })).toBe(true);
    expect(verifyWebhook(secret, headers, `${req.body} `, { nowMs: ctx.nowMs })).toBe(false);
    expect(verifyWebhook('another-secret-of-32-characters!', headers, req.body, { nowMs: ctx.nowMs })).toBe(
      false,
    );
    // Replayed ten minutes later: refused, however valid the signature.
    expect(verifyWebhook(secret, headers, req.body, { nowMs: ctx.nowMs + 600_000 })).toBe(false);
  });

  it.each([
    [200, 'delivered'],
    [202, 'delivered'],
    [400, 'rejected'],
    [404, 'rejected'],
    [410, 'rejected'],
    [408, 'failed'],
    [429, 'failed'],
    [500, 'failed'],
    [503, 'failed'],
  ])('HTTP %i is %s', (status, kind) => {
    expect(verdictOf(status, '').kind).toBe(kind);
  });
});
