import { kubePort } from '../kube/kube-port.ts';
import { withSharedReads } from '../kube/shared-reads-port.ts';
import { signedReportUrl } from '../report/report-token.ts';
import { kubeEventSink } from '../run/events.ts';
import type { Kind } from './kind.ts';

/**
 * Kuberhealthy v2's khcheck: the engine's own kind. Its state is its khstate, its checker pods report to
 * v2's `/externalCheckStatus` (the run signed into the path when a key is set), its Events name the khcheck.
 * Its runs are batched: in a batch they read their khstates and pods together (kube/shared-reads.ts).
 */
export const khcheckKind: Kind = {
  name: 'khcheck',
  noun: 'khcheck',
  ports: (client, shared) => ({
    kube: shared ? withSharedReads(kubePort(client), shared) : kubePort(client),
    events: kubeEventSink(client),
  }),
  reportingUrl: (base, key) => (key ? (run) => signedReportUrl(base, key, run) : base),
  run: (kit, run) => kit.iterate(kit.deps(run), run),
};
