import { formatMsAsGoDuration } from '../core/duration.ts';
import type { KhCheck } from '../state/resources.ts';
import { HC_API_VERSION, HC_KIND, type HealthCheck } from './resources.ts';

/**
 * A HealthCheck seen as the khcheck lib/run runs: the wrapped pod spec unwrapped, v3's pod metadata merged
 * under the extras exactly as v3's `CheckPodSpec` applies them (podSpec.metadata first, extras over it), the
 * durations already resolved with v3's defaults (so the khcheck validator's v2 defaults never apply).
 * apiVersion and kind stay the HealthCheck's, so anything reading the view knows what it came from.
 */
export function checkViewOf(
  hc: HealthCheck,
  durations: { timeoutMs: number; runIntervalMs: number },
): KhCheck {
  const podMeta = hc.spec?.podSpec?.metadata ?? {};
  return {
    apiVersion: HC_API_VERSION,
    kind: HC_KIND,
    metadata: hc.metadata,
    spec: {
      runInterval: formatMsAsGoDuration(durations.runIntervalMs),
      timeout: formatMsAsGoDuration(durations.timeoutMs),
      podSpec: hc.spec?.podSpec?.spec,
      extraLabels: { ...podMeta.labels, ...hc.spec?.extraLabels },
      extraAnnotations: { ...podMeta.annotations, ...hc.spec?.extraAnnotations },
    },
  };
}
