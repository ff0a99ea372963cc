import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem, type } from 'node:os';
import { dirname } from 'node:path';
import type { BenchCluster } from './bench-cluster.ts';
import type { BuildIdentity } from './build-for-bench.ts';

type Meta = { updates?: Array<{ sections: string[] }> };

/** What was run, where and on what: a full run's meta, or one entry of a partial run's meta.updates. */
export function benchEnvironment(o: {
  quick: boolean;
  startedAtMs: number;
  sectionSeconds: Record<string, number>;
  build: BuildIdentity;
  bench: BenchCluster;
}) {
  return {
    date: new Date().toISOString(),
    mode: o.quick ? 'quick' : 'full',
    /** The whole run, build and cluster start included; sectionSeconds for the sections timed apart. */
    seconds: Math.round((Date.now() - o.startedAtMs) / 1000),
    sectionSeconds: o.sectionSeconds,
    /** 1, 5 and 15 minute load averages when written: what else ran on the machine weighs on every figure. */
    loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
    build: o.build,
    machine: {
      os: type(),
      cpu: cpus()[0]?.model,
      cores: cpus().length,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
    },
    versions: {
      node: process.version,
      kubernetes: o.bench.cluster.kubernetesVersion,
      etcd: o.bench.cluster.etcdVersion,
    },
  };
}

/**
 * The results' meta after a run. A partial run (only) keeps the other sections as measured before and adds
 * an entry to meta.updates for the sections it measured, replacing the entries those sections cover; one
 * that measured every section (`sections`) leaves nothing of the earlier runs, so its meta is a full run's.
 * Pure.
 */
export function nextMeta(o: {
  only?: string[];
  measured: string[];
  metaBefore: Meta;
  environment: object;
  sections: readonly string[];
}): object {
  if (!o.only || o.sections.every((x) => o.measured.includes(x))) return o.environment;
  if (!o.measured.length) return o.metaBefore;
  const updates = (o.metaBefore.updates ?? []).filter(
    (u) => !u.sections.every((x) => o.measured.includes(x)),
  );
  return { ...o.metaBefore, updates: [...updates, { sections: o.measured, ...o.environment }] };
}

/** Writes the results file with nextMeta's meta. */
export async function writeResultsFile(
  file: string,
  results: Record<string, unknown>,
  o: Parameters<typeof nextMeta>[0],
): Promise<void> {
  results.meta = nextMeta(o);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
}
