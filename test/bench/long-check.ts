import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VersionApi } from '@kubernetes/client-node';
import { countRequests, waitForAuditFlush } from './audit.ts';
import type { BenchCluster } from './bench-cluster.ts';
import { createCommandCheck, sleepThenReport } from './command-check.ts';
import { spawnToExit } from './spawn-khrun.ts';

export interface LongCheckFigure {
  how: string;
  /** How long the checker waits before it reports success. */
  checkSeconds: number;
  /** `khrun run` spawned to exit. */
  runMs: number;
  requests: number;
  /** Requests beyond those of a check that reports at once are the wait's: lease renewals and watch re-opens. */
  byVerbResource: Record<string, number>;
  /** khstate writes by loop (user agent khrun/<loop>): `lease` is the renewal. */
  khstateWritesByLoop: Record<string, number>;
}

/**
 * Starts one `khrun run` (the bundle, spawned, as its own ServiceAccount) of a check whose checker sleeps
 * checkSeconds and then reports success (sh + the Go checkclient program), and returns a promise of its
 * figure: the benchmark runs the other sections meanwhile (this run only waits) and collects it before
 * anything restarts the API server.
 */
export async function startLongCheck(
  bench: BenchCluster,
  opts: { checkSeconds: number; dist: string; goChecker: string },
): Promise<() => Promise<LongCheckFigure>> {
  const user = await bench.userKubeConfig('long-runner');
  const kubeconfig = join(bench.cluster.dir, 'bench-long-runner.kubeconfig');
  await writeFile(kubeconfig, user.kc.exportConfig(), { mode: 0o600 });
  const name = 'long';
  const timeout = `${opts.checkSeconds + 120}s`;
  await createCommandCheck(bench.cluster.kubeConfig, bench.namespace, name, {
    command: sleepThenReport(opts.goChecker, opts.checkSeconds),
    runInterval: '1h',
    timeout,
  });
  const t0 = Date.now();
  const running = spawnToExit(
    [process.execPath, join(opts.dist, 'khrun.mjs'), 'run', '--check', name, '--namespace', bench.namespace],
    { KUBECONFIG: kubeconfig, KHRUN_REPORT_HOST: bench.cluster.hostIp },
  );
  return async () => {
    const run = await running;
    const endMs = Date.now();
    if (run.code !== 0) throw new Error(`the long check's khrun run exited ${run.code}:\n${run.stderr}`);
    const marker = Date.now();
    await user.kc.makeApiClient(VersionApi).getCode();
    await waitForAuditFlush(bench.auditLog, user.username, marker);
    const counted = await countRequests(bench.auditLog, user.username, t0, endMs);
    return {
      how: `one khrun run (the bundle, spawned) of a check that sleeps ${opts.checkSeconds} s and then reports success, requests of the runner's own ServiceAccount from the API server's audit log, spawn to exit; n=1`,
      checkSeconds: opts.checkSeconds,
      runMs: run.ms,
      requests: counted.total,
      byVerbResource: counted.byVerbResource,
      khstateWritesByLoop: counted.byLoop,
    };
  };
}
