import { truncateChars } from '../../core/text.ts';
import { type ChannelRequest, JSON_HEADERS, type RenderRequest } from '../channel.ts';
import { messageParts } from '../message.ts';

// Slack incoming webhooks (https://api.slack.com/messaging/webhooks): POST a JSON message to the
// webhook's URL; `text` is required and is the notification's fallback when `blocks` are given; a
// section block's text is mrkdwn of at most 3000 characters (Block Kit reference). Slack answers 200
// `ok`; 400 invalid_payload/no_text, 403, 404 and 410 are errors a retry does not fix.

const SECTION_MAX_CHARS = 3000;

/** mrkdwn's three control characters, escaped as Slack documents (`&amp;`, `&lt;`, `&gt;`). */
const escapeMrkdwn = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A Slack message: the title in bold, then one line per fact; the status page as a link. */
export const slackRequest: RenderRequest = (channel, n, ctx): ChannelRequest => {
  const parts = messageParts(n, ctx.statusPageUrl);
  const lines = parts.facts.map((f) =>
    f.label === 'Status page' ? `*${f.label}:* <${f.value}|open>` : `*${f.label}:* ${escapeMrkdwn(f.value)}`,
  );
  const mrkdwn = truncateChars([`*${escapeMrkdwn(parts.title)}*`, ...lines].join('\n'), SECTION_MAX_CHARS);
  return {
    url: channel.url,
    headers: { ...JSON_HEADERS },
    body: JSON.stringify({
      text: parts.title,
      blocks: [{ type: 'section', text: { type: 'mrkdwn', text: mrkdwn } }],
    }),
  };
};
