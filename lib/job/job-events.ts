import type { KubeClient } from '../kube/kube-client.ts';
import { type EventSink, outcomeEvent } from '../run/events.ts';
import { KHJOB_KIND } from './khjob.ts';

/**
 * The engine's outcome Events, on the KuberhealthyJob instead of a KuberhealthyCheck, so `kubectl describe
 * khjob` lists them (needs `create` on `events` in the khjob's namespace, as for khchecks).
 */
export function kubeJobEventSink(client: KubeClient): EventSink {
  const core = client.core;
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
