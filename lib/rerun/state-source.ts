import type { KubernetesObject } from '@kubernetes/client-node';
import type { RunTarget } from '../core/run-target.ts';
import { HC_GROUP, HC_PLURAL, HC_VERSION, type HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf } from '../healthcheck/state-view.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../state/resources.ts';

/**
 * Where a target's run state lives, to list and watch it by name: a khcheck's and a khjob's khstate, a
 * HealthCheck's own object (read through its khstate view).
 */
export interface StateSource {
  path: string;
  fieldSelector: string;
  /** For messages: `khstates.comcast.github.io`. */
  resource: string;
  /** The listed object as a khstate. */
  view(object: KubernetesObject): KhState;
}

export function stateSource(target: RunTarget): StateSource {
  const fieldSelector = `metadata.name=${target.name}`;
  if (target.kind === 'healthcheck')
    return {
      path: `/apis/${HC_GROUP}/${HC_VERSION}/namespaces/${target.namespace}/${HC_PLURAL}`,
      fieldSelector,
      resource: `${HC_PLURAL}.${HC_GROUP}`,
      view: (object) => stateViewOf(object as HealthCheck),
    };
  return {
    path: `/apis/${KH_GROUP}/${KH_VERSION}/namespaces/${target.namespace}/${KHSTATE_PLURAL}`,
    fieldSelector,
    resource: `${KHSTATE_PLURAL}.${KH_GROUP}`,
    view: (object) => object as KhState,
  };
}
