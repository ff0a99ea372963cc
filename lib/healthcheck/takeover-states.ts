import type { KubeClient } from '../kube/kube-client.ts';
import { waitForSet } from '../kube/list-watch.ts';
import type { TakeoverStates } from '../takeover/port.ts';
import { healthCheckApi } from './healthcheck-api.ts';
import { healthCheckPort } from './healthcheck-port.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION, type HealthCheck } from './resources.ts';
import { FOREIGN_RUNNER, stateViewOf } from './state-view.ts';

/**
 * The HealthChecks of the whole cluster as `khrun takeover` and `khrun handback` see the states of a v3
 * install (lib/takeover/port.ts): the state views and writes of the HealthCheck port, so taking over is the
 * same compare-and-swap on the same view the runner claims on; v3's run in flight reads as FOREIGN_RUNNER's.
 */
export function healthCheckTakeoverStates(client: KubeClient): TakeoverStates {
  const api = healthCheckApi(client);
  const port = healthCheckPort(api);
  return {
    readState: port.readState,
    createState: port.createState,
    replaceState: port.replaceState,
    listCheckPods: port.listCheckPods,
    removePod: port.removePod,
    foreignRunner: FOREIGN_RUNNER,
    listStates: async () => (await api.list()).map(stateViewOf),
    waitForStates: (decide, opts) =>
      waitForSet<HealthCheck, ReturnType<typeof decide> & {}>({
        kc: client,
        path: `/apis/${HC_GROUP}/${HC_VERSION}/${HC_PLURAL}`,
        decide: (items) => decide([...items.values()].map(stateViewOf)) ?? undefined,
        ...opts,
      }),
  };
}
