// What each provider documents its receiving endpoint takes, as checks a local receiver runs on every
// request: a payload that breaks one is answered 400, as the provider would, so a test that passes has
// sent only what the provider accepts. Each check cites the page it was written from.

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === 'string';

/** Problems with a body, [] when it is valid. */
export type SchemaCheck = (body: unknown) => string[];

/**
 * Slack incoming webhooks (https://api.slack.com/messaging/webhooks, "Sending messages using incoming
 * webhooks", and the Block Kit reference for section blocks): a JSON object; `text` is required (with
 * blocks it is the notification fallback); `blocks` an array of layout blocks, each with a `type`; a
 * section's `text` a text object of type mrkdwn or plain_text, at most 3000 characters. Slack answers
 * 400 invalid_payload / no_text otherwise.
 */
export const slackSchema: SchemaCheck = (body) => {
  const p: string[] = [];
  if (!isObj(body)) return ['the body is not a JSON object'];
  const known = [
    'text',
    'blocks',
    'attachments',
    'thread_ts',
    'mrkdwn',
    'username',
    'icon_emoji',
    'icon_url',
    'channel',
    'unfurl_links',
    'unfurl_media',
    'metadata',
  ];
  for (const k of Object.keys(body)) if (!known.includes(k)) p.push(`unknown field ${k}`);
  if (!isStr(body.text) || body.text.trim() === '') p.push('no_text: text is required');
  if (body.blocks !== undefined) {
    if (!Array.isArray(body.blocks) || body.blocks.length > 50)
      p.push('blocks must be an array of at most 50 blocks');
    else
      for (const [i, b] of body.blocks.entries()) {
        if (!isObj(b) || !isStr(b.type)) {
          p.push(`blocks[${i}] has no type`);
          continue;
        }
        if (b.type === 'section') {
          const t = b.text;
          if (!isObj(t) || (t.type !== 'mrkdwn' && t.type !== 'plain_text') || !isStr(t.text))
            p.push(`blocks[${i}].text must be a text object (mrkdwn or plain_text)`);
          else if (t.text.length < 1 || t.text.length > 3000)
            p.push(`blocks[${i}].text.text must be 1 to 3000 characters`);
        }
      }
  }
  return p;
};

/**
 * PagerDuty Events API v2 ("Send an Alert Event", PagerDuty developer docs events-API-v2/02-Trigger-Events,
 * and the overview's size limit): routing_key and event_action (trigger, acknowledge, resolve) required;
 * dedup_key at most 255 characters (required for acknowledge and resolve to find the alert); a trigger
 * needs payload.summary (at most 1024 characters), payload.source and payload.severity (critical, error,
 * warning, info); payload.timestamp ISO 8601; links need href; at most 512 KB.
 */
export const pagerDutySchema: SchemaCheck = (body) => {
  const p: string[] = [];
  if (!isObj(body)) return ['the body is not a JSON object'];
  if (JSON.stringify(body).length > 512 * 1024) p.push('the event is over 512 KB');
  if (!isStr(body.routing_key) || body.routing_key.length !== 32)
    p.push('routing_key must be the 32-character integration key');
  if (!['trigger', 'acknowledge', 'resolve'].includes(body.event_action as string))
    p.push('event_action must be trigger, acknowledge or resolve');
  if (body.dedup_key !== undefined && (!isStr(body.dedup_key) || body.dedup_key.length > 255))
    p.push('dedup_key must be a string of at most 255 characters');
  if (body.event_action !== 'trigger' && !isStr(body.dedup_key))
    p.push(`${String(body.event_action)} needs the dedup_key of the alert`);
  if (body.event_action === 'trigger') {
    const pl = body.payload;
    if (!isObj(pl)) p.push('a trigger needs a payload');
    else {
      if (!isStr(pl.summary) || pl.summary.length < 1 || pl.summary.length > 1024)
        p.push('payload.summary must be 1 to 1024 characters');
      if (!isStr(pl.source) || pl.source === '') p.push('payload.source is required');
      if (!['critical', 'error', 'warning', 'info'].includes(pl.severity as string))
        p.push('payload.severity must be critical, error, warning or info');
      if (pl.timestamp !== undefined && (!isStr(pl.timestamp) || Number.isNaN(Date.parse(pl.timestamp))))
        p.push('payload.timestamp must be ISO 8601');
      for (const k of ['component', 'group', 'class'] as const)
        if (pl[k] !== undefined && !isStr(pl[k])) p.push(`payload.${k} must be a string`);
      if (pl.custom_details !== undefined && !isObj(pl.custom_details))
        p.push('payload.custom_details must be an object');
    }
    if (
      body.links !== undefined &&
      !(Array.isArray(body.links) && body.links.every((l) => isObj(l) && isStr(l.href)))
    )
      p.push('links[] need href');
  }
  return p;
};

/**
 * Microsoft Teams incoming webhook / Workflows webhook with an Adaptive Card (Microsoft Teams platform docs,
 * "Send Adaptive Cards using an Incoming Webhook", webhooks-and-connectors/how-to/connectors-using): `type`
 * must be "message"; `attachments` a set of cards, each with contentType
 * "application/vnd.microsoft.card.adaptive" and the card in `content` (type AdaptiveCard, a version, a
 * body of elements with a type); of the actions only Action.OpenUrl, Action.ShowCard and
 * Action.ToggleVisibility are supported (not Action.Submit).
 */
export const teamsSchema: SchemaCheck = (body) => {
  const p: string[] = [];
  if (!isObj(body)) return ['the body is not a JSON object'];
  if (body.type !== 'message') p.push('type must be "message"');
  if (!Array.isArray(body.attachments) || body.attachments.length === 0)
    return [...p, 'attachments must hold a card'];
  for (const [i, a] of body.attachments.entries()) {
    if (!isObj(a) || a.contentType !== 'application/vnd.microsoft.card.adaptive') {
      p.push(`attachments[${i}].contentType must be application/vnd.microsoft.card.adaptive`);
      continue;
    }
    const c = a.content;
    if (!isObj(c) || c.type !== 'AdaptiveCard' || !isStr(c.version)) {
      p.push(`attachments[${i}].content must be an AdaptiveCard with a version`);
      continue;
    }
    if (!Array.isArray(c.body) || !c.body.every((e) => isObj(e) && isStr(e.type)))
      p.push(`attachments[${i}].content.body must be elements with a type`);
    for (const e of (c.body as unknown[]) ?? [])
      if (isObj(e) && e.type === 'TextBlock' && !isStr(e.text)) p.push('a TextBlock needs text');
    const actions = c.actions ?? [];
    if (!Array.isArray(actions)) p.push('actions must be an array');
    else
      for (const act of actions)
        if (
          !isObj(act) ||
          !['Action.OpenUrl', 'Action.ShowCard', 'Action.ToggleVisibility'].includes(act.type as string)
        )
          p.push(`action ${isObj(act) ? String(act.type) : '?'} is not supported by incoming webhooks`);
  }
  return p;
};

/** khrun's generic webhook body, schema version 1 (docs/alerts.md). */
export const khrunWebhookSchema: SchemaCheck = (body) => {
  const p: string[] = [];
  if (!isObj(body)) return ['the body is not a JSON object'];
  if (body.version !== 1) p.push('version must be 1');
  for (const k of ['id', 'incident', 'run', 'since', 'at', 'title', 'text'] as const)
    if (!isStr(body[k])) p.push(`${k} must be a string`);
  if (!['firing', 'reminder', 'resolved', 'flapping', 'settled'].includes(body.event as string))
    p.push('event must be firing, reminder, resolved, flapping or settled');
  const c = body.check;
  if (
    !isObj(c) ||
    !['khcheck', 'khjob', 'healthcheck'].includes(c.kind as string) ||
    !isStr(c.namespace) ||
    !isStr(c.name)
  )
    p.push('check must be {kind, namespace, name}');
  if (!isObj(body.outcome) || !isStr(body.outcome.kind)) p.push('outcome must be {kind, error?}');
  if (typeof body.failures !== 'number') p.push('failures must be a number');
  return p;
};
