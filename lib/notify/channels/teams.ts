import { type ChannelRequest, JSON_HEADERS, type RenderRequest } from '../channel.ts';
import { closes, messageParts } from '../message.ts';

// Microsoft Teams, through a Workflows webhook ("When a Teams webhook request is received", the successor
// of Office 365 Connectors) or a legacy incoming webhook: both take a message whose attachments hold an
// Adaptive Card (Microsoft Teams platform docs, "Send Adaptive Cards using an Incoming Webhook",
// webhooks-and-connectors/how-to/connectors-using): `type` must be "message", each attachment's
// contentType "application/vnd.microsoft.card.adaptive", its `content` the card; Workflows take Adaptive
// Cards only, not the older MessageCard.

export const ADAPTIVE_CARD_CONTENT_TYPE = 'application/vnd.microsoft.card.adaptive';

export const teamsRequest: RenderRequest = (channel, n, ctx): ChannelRequest => {
  const parts = messageParts(n, ctx.statusPageUrl);
  const card = {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: '1.2',
    body: [
      {
        type: 'TextBlock',
        text: parts.title,
        weight: 'Bolder',
        wrap: true,
        color: closes(n) ? 'Good' : n.event === 'flapping' ? 'Warning' : 'Attention',
      },
      {
        type: 'FactSet',
        facts: parts.facts
          .filter((f) => f.label !== 'Status page')
          .map((f) => ({ title: f.label, value: f.value })),
      },
    ],
    ...(parts.statusUrl
      ? { actions: [{ type: 'Action.OpenUrl', title: 'Status page', url: parts.statusUrl }] }
      : {}),
  };
  return {
    url: channel.url,
    headers: { ...JSON_HEADERS },
    body: JSON.stringify({
      type: 'message',
      attachments: [{ contentType: ADAPTIVE_CARD_CONTENT_TYPE, contentUrl: null, content: card }],
    }),
  };
};
