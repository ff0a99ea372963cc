import { kubeJobEventSink } from '../job/job-events.ts';
import { jobKube } from '../job/job-kube.ts';
import { runKhJob } from '../job/run-khjob.ts';
import { kubePort } from '../kube/kube-port.ts';
import { khcheckKind } from './khcheck.ts';
import type { Kind } from './kind.ts';

/**
 * Kuberhealthy v2's khjob: run once (lib/job/run-khjob.ts decides), its state a khstate as a khcheck's,
 * its checker pods reporting where a khcheck's do, its Events on the KuberhealthyJob.
 */
export const khjobKind: Kind = {
  name: 'khjob',
  noun: 'khjob',
  ports: (client) => ({ kube: kubePort(client), events: kubeJobEventSink(client) }),
  reportingUrl: khcheckKind.reportingUrl,
  run: (kit, run) =>
    runKhJob(
      {
        jobs: jobKube(kit.client),
        base: kit.deps(run),
        events: kit.ports.events,
        iterate: (adapt) => kit.iterate(adapt(kit.deps(run)), run),
      },
      { namespace: run.target.namespace, name: run.target.name, runner: kit.runner },
    ),
};
