import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type EventSink, outcomeEvent } from '../run/events.ts';
import { HC_API_VERSION, HC_KIND } from './resources.ts';

/** khrun's outcome Events, on the HealthCheck (`kubectl describe healthcheck` lists them). */
export function healthCheckEventSink(kc: KubeConfig): EventSink {
  const core = kc.makeApiClient(CoreV1Api);
  return {
    async outcomeRecorded(recorded) {
      const event = outcomeEvent(recorded);
      event.involvedObject = { ...event.involvedObject, apiVersion: HC_API_VERSION, kind: HC_KIND };
      await core.createNamespacedEvent({ namespace: recorded.namespace, body: event });
    },
  };
}
