import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Route } from '../report/routes.ts';
import { type GateConfig, gateTrigger, TRIGGER_PATH } from './gate.ts';
import type { TriggerAnswer, TriggerRuns } from './trigger-runs.ts';

/** The JSON every trigger answer carries: `accepted`, and why when it was not (or not yet) done. */
export function sendTriggerAnswer(
  res: ServerResponse,
  answer: TriggerAnswer,
  opts: { close: boolean },
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(answer.status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    ...answer.headers,
    // A body the trigger never reads is not drained over a kept-alive connection: the connection goes.
    ...(opts.close ? { connection: 'close' } : {}),
  });
  res.end(`${JSON.stringify(answer.body)}\n`);
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * `POST /api/run` on `khrun serve`'s listener: the gate decides from the request alone (no API call for a
 * refused one), then the runs start the iteration. Without a trigger (no token configured) the route is not
 * mounted at all and the path is a 404 like any other, so the trigger is never open.
 */
export function triggerRoute(opts: { gate: GateConfig; runs: TriggerRuns }): Route {
  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://trigger.invalid');
    if (url.pathname !== TRIGGER_PATH) return false;
    const decision = gateTrigger(opts.gate, {
      method: req.method ?? '',
      query: url.search.slice(1),
      authorization: req.headers.authorization,
    });
    const answer: TriggerAnswer = decision.ok
      ? await opts.runs.trigger(decision.target)
      : {
          status: decision.status,
          body: { accepted: false, reason: decision.reason },
          headers: decision.headers,
        };
    sendTriggerAnswer(res, answer, { close: hasBody(req) });
    return true;
  };
}
