import { dumpYaml, type V1PodTemplateSpec } from '@kubernetes/client-node';
import type { Log } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { RunJobOptions } from '../schedule/run-job.ts';
import { runSync, type SyncKube, type SyncResult } from '../sync/sync.ts';

export interface SyncCommandOptions {
  kube: SyncKube;
  scope: NamespaceScope;
  template: V1PodTemplateSpec;
  jobOptions: RunJobOptions;
  dryRun: boolean;
  output: 'text' | 'yaml' | 'json';
  /** What the reader must know about this output (a placeholder template): a line, a YAML comment or a field. */
  notes?: readonly string[];
  log: Log;
  write: (line: string) => void;
}

function describe(r: SyncResult): string {
  if (r.kind === 'delete') {
    return `cronjob ${r.namespace}/${r.name} ${r.outcome === 'would' ? 'would be deleted' : 'deleted'} (khcheck ${r.check} is gone)`;
  }
  const cj = r.cronJob;
  const verb = r.outcome === 'would' ? 'would be applied' : r.outcome;
  return `cronjob ${cj.metadata?.namespace}/${cj.metadata?.name} ${verb}: "${cj.spec?.schedule}"${r.note ? `\n  note: ${r.note}` : ''}`;
}

/**
 * `khrun sync`: one CronJob per khcheck. `--dry-run -o yaml` prints the CronJobs (notes about schedules
 * that are not exact as YAML comments above each) and the deletions it would make, and changes nothing.
 */
export async function syncCommand(opts: SyncCommandOptions): Promise<number> {
  const results = await runSync(
    { kube: opts.kube, log: opts.log },
    { scope: opts.scope, template: opts.template, jobOptions: opts.jobOptions, dryRun: opts.dryRun },
  );
  const notes = opts.notes ?? [];
  if (opts.output === 'json') {
    opts.write(JSON.stringify(notes.length ? { notes, results } : { results }));
  } else if (opts.output === 'yaml') {
    for (const note of notes) opts.write(`# note: ${note}`);
    for (const r of results) {
      if (r.kind === 'delete') {
        opts.write(`# ${describe(r)}`);
        continue;
      }
      opts.write('---');
      if (r.note) opts.write(`# note: ${r.note}`);
      opts.write(dumpYaml(r.cronJob).trimEnd());
    }
  } else {
    for (const note of notes) opts.write(`note: ${note}`);
    for (const r of results) opts.write(describe(r));
    const applied = results.filter((r) => r.kind === 'apply').length;
    const deleted = results.filter((r) => r.kind === 'delete').length;
    opts.write(
      `sync: ${applied} CronJobs ${opts.dryRun ? 'to apply' : 'applied'}, ${deleted} ${opts.dryRun ? 'to delete' : 'deleted'}`,
    );
  }
  return 0;
}
