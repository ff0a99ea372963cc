import type { KubeClient } from '../kube/kube-client.ts';
import { type EventSink, outcomeEvent } from '../run/events.ts';
import { HC_API_VERSION, HC_KIND } from './resources.ts';

/** khrun's outcome Events, on the HealthCheck (`kubectl describe healthcheck` lists them). */
export function healthCheckEventSink(client: KubeClient): EventSink {
  const core = client.core;
  return {
    async outcomeRecorded(recorded) {
      const event = outcomeEvent(recorded);
      event.involvedObject = { ...event.involvedObject, apiVersion: HC_API_VERSION, kind: HC_KIND };
      await core.createNamespacedEvent({ namespace: recorded.namespace, body: event });
    },
  };
}
