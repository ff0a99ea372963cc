import type { HealthCheck } from '../healthcheck/resources.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION } from '../healthcheck/resources.ts';
import { healthCheckStatusView } from '../healthcheck/status-view.ts';
import { isNotFound } from '../kube/errors.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import { writerAgent } from '../kube/kube-port.ts';
import type { ReadParent } from '../notify/dependencies.ts';
import { NOTIFY_WRITER } from '../notify/store.ts';
import { readNotifyState } from '../state/notify-state.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../state/resources.ts';

/**
 * A parent's state through the client object (notify.khrun.dev/depends-on): one GET of its khstate (a
 * khcheck's or khjob's) or of the HealthCheck, with the notifications' user agent (khrun/notify), so the
 * audit log counts it with them. Failing: its last recorded result was not OK.
 */
export function kubeParentStates(client: Pick<KubeClient, 'custom'>): ReadParent {
  const get = async <T>(group: string, version: string, plural: string, namespace: string, name: string) => {
    try {
      return (await client.custom.getNamespacedCustomObject(
        { group, version, plural, namespace, name },
        writerAgent(NOTIFY_WRITER),
      )) as T;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  };
  return async (parent) => {
    if (parent.kind === 'healthcheck') {
      const hc = await get<HealthCheck>(HC_GROUP, HC_VERSION, HC_PLURAL, parent.namespace, parent.name);
      if (!hc) return null;
      const v = healthCheckStatusView(hc);
      if (!v.hasRun) return null;
      const notify = readNotifyState(hc);
      return { failing: !v.ok || v.errors.some((e) => e.trim() !== ''), ...(notify ? { notify } : {}) };
    }
    const state = await get<KhState>(KH_GROUP, KH_VERSION, KHSTATE_PLURAL, parent.namespace, parent.name);
    if (!state?.spec?.AuthoritativePod) return null;
    const notify = readNotifyState(state);
    const errors = (state.spec.Errors ?? []).filter((e) => typeof e === 'string' && e.trim() !== '');
    return { failing: state.spec.OK === false || errors.length > 0, ...(notify ? { notify } : {}) };
  };
}
