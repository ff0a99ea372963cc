import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { CHECK_NAME_LABEL, RUN_ID_LABEL } from '../../../../lib/check/pod-builder.ts';

/**
 * Counts the runs whose checker reported, from the checkers' side: checker pods GET url(check) just before
 * they send their report (CheckerOptions.notifyUrl), and the tally finds the calling pod by its source
 * address (a pod's IP on the pod network) to learn its run. So `reported` in a fault row is counted per
 * run, the same unit as the outcomes a khstate records: a replaced pod of the same run, or a second report
 * of a run, is not a second outcome.
 */
export interface ReportTally {
  url(check: string): string;
  /** The run UUIDs whose checker of this check reported, in order of first report. */
  runs(check: string): string[];
  close(): Promise<void>;
}

const isFinished = (p: V1Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
const created = (p: V1Pod) => new Date(p.metadata?.creationTimestamp ?? 0).getTime();

export async function startReportTally(kc: KubeConfig, host: string): Promise<ReportTally> {
  const core = kc.makeApiClient(CoreV1Api);
  const seen = new Map<string, string[]>();
  let unknown = 0;
  // Pod IPs are reused: a finished pod of an earlier run may still hold the caller's address, so only a
  // live pod counts; the kubelet may publish the new pod's IP a moment after its process starts, so the
  // lookup is repeated briefly (bounded) before the report is counted as a run of its own.
  const runOf = async (check: string, ip: string): Promise<string> => {
    for (let attempt = 0; attempt < 40; attempt++) {
      const pods = await core.listPodForAllNamespaces({ fieldSelector: `status.podIP=${ip}` });
      const live = pods.items
        .filter((p) => p.metadata?.labels?.[CHECK_NAME_LABEL] === check && !isFinished(p))
        .sort((a, b) => created(b) - created(a));
      const run = live[0]?.metadata?.labels?.[RUN_ID_LABEL];
      if (run) return run;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // Never dropped: a report whose pod cannot be found still counts, as a run of its own.
    return `unidentified-${++unknown}`;
  };
  const server = createServer((req, res) => {
    const check = decodeURIComponent((req.url ?? '/').slice(1));
    const ip = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    runOf(check, ip)
      .catch(() => `unidentified-${++unknown}`)
      .then((run) => {
        const runs = seen.get(check) ?? [];
        if (!runs.includes(run)) seen.set(check, [...runs, run]);
        res.end('counted');
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const base = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    url: (check) => `${base}/${encodeURIComponent(check)}`,
    runs: (check) => [...(seen.get(check) ?? [])],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** How many of the reported runs the test saw recorded: their UUID was a khstate's last outcome when read. */
export function recordedOf(reported: string[], seenRecorded: Iterable<string | undefined>): number {
  const seen = new Set(seenRecorded);
  return reported.filter((run) => seen.has(run)).length;
}
