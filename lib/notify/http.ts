import type { ChannelRequest } from './channel.ts';

/** A receiver's answer: its status and (the start of) its body. */
export interface HttpAnswer {
  status: number;
  body: string;
}

/**
 * The one port deliveries go through: POST the request, give up after timeoutMs (a rejection), answer
 * with any HTTP status. Tests count and inspect what passes here; the real one is fetchSender.
 */
export interface HttpSender {
  post(request: ChannelRequest, timeoutMs: number): Promise<HttpAnswer>;
}

const MAX_BODY_CHARS = 512;

/** HttpSender over Node's fetch: no redirects followed (a webhook URL that moves is a configuration error). */
export const fetchSender: HttpSender = {
  async post(request, timeoutMs) {
    const response = await fetch(request.url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = (await response.text()).slice(0, MAX_BODY_CHARS);
    return { status: response.status, body };
  },
};
