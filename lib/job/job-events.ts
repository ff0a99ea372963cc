import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type EventSink, outcomeEvent } from '../run/events.ts';
import { KHJOB_KIND } from './khjob.ts';

/**
 * The engine's outcome Events, on the KuberhealthyJob instead of a KuberhealthyCheck, so `kubectl describe
 * khjob` lists them (needs `create` on `events` in the khjob's namespace, as for khchecks).
 */
export function kubeJobEventSink(kc: KubeConfig): EventSink {
  const core = kc.makeApiClient(CoreV1Api);
  return {
    async outcomeRecorded(recorded) {
      const event = outcomeEvent(recorded);
      await core.createNamespacedEvent({
        namespace: recorded.namespace,
        body: { ...event, involvedObject: { ...event.involvedObject, kind: KHJOB_KIND } },
      });
    },
  };
}
