import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from './bench-cluster.ts';

/** The tick's settings a benchmark copies from the khrun-tick CronJob, so it measures khrun as deployed. */
export const DEPLOYED_TICK_SETTINGS = ['KHRUN_BATCH_SIZE', 'KHRUN_TICK_CONCURRENCY'] as const;

type EnvVar = { name?: string; value?: string };
type CronJob = {
  kind?: string;
  metadata?: { name?: string };
  spec?: { jobTemplate?: { spec?: { template?: { spec?: { containers?: Array<{ env?: EnvVar[] }> } } } } };
};

/**
 * KHRUN_BATCH_SIZE and KHRUN_TICK_CONCURRENCY as infra/deploy's khrun-tick CronJob sets them (the file the
 * chart renders). Throws, naming the file, when either is missing or not a literal value: a benchmark that
 * spawned the tick without them would measure the library's defaults (one Job per check), not khrun as
 * installed.
 */
export function deployedTickEnv(file = join(repoRoot, 'infra/deploy/tick.yaml')): Record<string, string> {
  const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as CronJob);
  const cron = docs.find((d) => d?.kind === 'CronJob' && d.metadata?.name === 'khrun-tick');
  const env = cron?.spec?.jobTemplate?.spec?.template?.spec?.containers?.flatMap((c) => c.env ?? []) ?? [];
  const out: Record<string, string> = {};
  for (const name of DEPLOYED_TICK_SETTINGS) {
    const value = env.find((e) => e.name === name)?.value;
    if (value === undefined)
      throw new Error(
        `${file}: the khrun-tick CronJob sets no literal ${name}; the benchmark copies it from there`,
      );
    out[name] = value;
  }
  return out;
}
