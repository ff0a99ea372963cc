import { randomUUID } from 'node:crypto';
import { runnerClient } from '../kube/kube-client.ts';
import { kubePort } from '../kube/kube-port.ts';
import { type RunCheckOptions, runCheck } from '../run/invocation.ts';
import { kubeJobEventSink } from './job-events.ts';
import { jobKube } from './job-kube.ts';
import { type JobRunResult, runKhJob } from './run-khjob.ts';

export type RunKhJobOptions = Omit<RunCheckOptions, 'checkName' | 'adapt'> & { jobName: string };

/**
 * One invocation of the runner for a khjob: `khrun run --job`, and the Jobs the tick dispatches for
 * khjobs. The run itself is runCheck's (report endpoint, iteration), through the khjob's ports.
 */
export async function runKhJobInvocation(opts: RunKhJobOptions): Promise<JobRunResult> {
  // One client object for the khjob's ports and its run's session: one bound, one clock.
  const client = opts.client ?? runnerClient(opts.kc, opts.log);
  const { clock } = client;
  return runKhJob(
    {
      jobs: jobKube(client),
      base: { kube: kubePort(client), clock, ids: { runUuid: randomUUID }, log: opts.log },
      events: kubeJobEventSink(client),
      iterate: (adapt) => runCheck({ ...opts, client, checkName: opts.jobName, adapt }),
    },
    { namespace: opts.namespace, name: opts.jobName, runner: opts.runner },
  );
}
