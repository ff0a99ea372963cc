import type { ChannelType, RenderRequest } from '../channel.ts';
import { alertmanagerRequest } from './alertmanager.ts';
import { pagerDutyRequest } from './pagerduty.ts';
import { slackRequest } from './slack.ts';
import { teamsRequest } from './teams.ts';
import { webhookRequest } from './webhook.ts';

/** Each channel type's request: the one place a type is chosen. */
export const RENDERERS: Readonly<Record<ChannelType, RenderRequest>> = {
  alertmanager: alertmanagerRequest,
  webhook: webhookRequest,
  slack: slackRequest,
  pagerduty: pagerDutyRequest,
  teams: teamsRequest,
};
