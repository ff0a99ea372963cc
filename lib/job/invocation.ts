import { randomUUID } from 'node:crypto';
import { kubePort } from '../kube/kube-port.ts';
import { apiServerClock } from '../kube/server-clock.ts';
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
  const clock = apiServerClock(opts.kc, opts.log);
  return runKhJob(
    {
      jobs: jobKube(opts.kc),
      base: { kube: kubePort(opts.kc), clock, ids: { runUuid: randomUUID }, log: opts.log },
      events: kubeJobEventSink(opts.kc),
      iterate: (adapt) => runCheck({ ...opts, checkName: opts.jobName, adapt }),
    },
    { namespace: opts.namespace, name: opts.jobName, runner: opts.runner },
  );
}
