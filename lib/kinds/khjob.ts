import { kubeJobEventSink } from '../job/job-events.ts';
import { type JobKube, jobKube } from '../job/job-kube.ts';
import { runKhJob } from '../job/run-khjob.ts';
import { kubePort } from '../kube/kube-port.ts';
import { khcheckKind } from './khcheck.ts';
import type { Kind, KindPorts } from './kind.ts';

/** A khjob's ports: the engine's, and the khjob itself (its phase). */
export interface KhJobPorts extends KindPorts {
  jobs: JobKube;
}

/**
 * Kuberhealthy v2's khjob: run once (lib/job/run-khjob.ts decides), its state a khstate as a khcheck's,
 * its checker pods reporting where a khcheck's do, its Events on the KuberhealthyJob.
 */
export const khjobKind: Kind<KhJobPorts> = {
  name: 'khjob',
  noun: 'khjob',
  ports: (client) => ({ kube: kubePort(client), events: kubeJobEventSink(client), jobs: jobKube(client) }),
  reportingUrl: khcheckKind.reportingUrl,
  run: (kit, run) =>
    runKhJob(
      {
        jobs: kit.ports.jobs,
        base: kit.deps(run),
        events: kit.ports.events,
        iterate: (adapt) => kit.iterate(adapt(kit.deps(run)), run),
      },
      { namespace: run.target.namespace, name: run.target.name, runner: kit.runner },
    ),
};
