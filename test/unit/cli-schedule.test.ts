import { ApiException, loadAllYaml, type V1CronJob } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { dryRunTemplate } from '../../functions/cli/sync.ts';
import { syncCommand } from '../../lib/commands/sync.ts';
import { tickCommand } from '../../lib/commands/tick.ts';
import { placeholderRunnerTemplate } from '../../lib/config/runner-template.ts';
import { silentLog } from '../../lib/core/log.ts';
import { DEFAULT_RUN_JOB_OPTIONS } from '../../lib/schedule/run-job.ts';
import type { KhCheck } from '../../lib/state/resources.ts';
import type { SyncKube } from '../../lib/sync/sync.ts';
import type { TickKube } from '../../lib/tick/tick-port.ts';

// `khrun sync --dry-run` shows what would be applied before anything is installed: without the
// khrun-runner PodTemplate it renders a clear placeholder runner and says so, in every output format.

const ref = { namespace: 'kuberhealthy', name: 'khrun-runner' };
const apiError = (code: number) => new ApiException(code, 'nope', '{}', {});

describe('the runner template of a dry run', () => {
  it('is the PodTemplate when it can be read', async () => {
    const template = { spec: { containers: [{ name: 'runner', image: 'khrun:1' }] } };
    expect(await dryRunTemplate(async () => ({ template }), ref)).toEqual({ template });
  });

  it.each([
    [404, 'does not exist'],
    [403, 'cannot be read (forbidden)'],
  ])('a placeholder, with a note, when the API answers %i', async (code, why) => {
    const result = await dryRunTemplate(async () => Promise.reject(apiError(code)), ref);
    expect(result.template).toEqual(placeholderRunnerTemplate(ref));
    expect(result.note).toBe(
      `the runner PodTemplate kuberhealthy/khrun-runner ${why}: rendered with a placeholder runner (image "<image of PodTemplate kuberhealthy/khrun-runner>"); apply infra/deploy before a real sync`,
    );
  });

  it('any other failure is not hidden', async () => {
    await expect(dryRunTemplate(async () => Promise.reject(apiError(500)), ref)).rejects.toThrow();
  });

  it('the placeholder is a runner a reader recognizes', () => {
    const container = placeholderRunnerTemplate(ref).spec?.containers[0];
    expect(container).toMatchObject({
      name: 'runner',
      image: '<image of PodTemplate kuberhealthy/khrun-runner>',
      args: ['run', '--output', 'json'],
    });
  });
});

const check: KhCheck = {
  apiVersion: 'comcast.github.io/v1',
  kind: 'KuberhealthyCheck',
  metadata: { name: 'dns', namespace: 'team-a', uid: 'u1' },
  spec: { runInterval: '10m', timeout: '1m', podSpec: { containers: [{ name: 'c', image: 'busybox' }] } },
};
const kube: SyncKube = {
  listChecks: async () => [check],
  listManagedCronJobs: async () => [],
  applyCronJob: async () => 'created',
  deleteCronJob: async () => {},
};

async function sync(output: 'text' | 'yaml' | 'json') {
  const lines: string[] = [];
  await syncCommand({
    kube,
    scope: 'all',
    template: placeholderRunnerTemplate(ref),
    jobOptions: DEFAULT_RUN_JOB_OPTIONS,
    dryRun: true,
    output,
    notes: ['the runner PodTemplate is missing'],
    log: silentLog,
    write: (line) => lines.push(line),
  });
  return lines.join('\n');
}

describe('sync prints its notes in every format', () => {
  it('text: a note line first', async () => {
    expect((await sync('text')).split('\n')[0]).toBe('note: the runner PodTemplate is missing');
  });

  it('yaml: a comment, and the documents still parse', async () => {
    const text = await sync('yaml');
    expect(text.split('\n')[0]).toBe('# note: the runner PodTemplate is missing');
    const docs = loadAllYaml(text) as V1CronJob[];
    expect(docs.map((d) => d.metadata?.name)).toEqual(['khrun-dns']);
  });

  it('json: a notes field beside the results', async () => {
    expect(JSON.parse(await sync('json'))).toMatchObject({
      notes: ['the runner PodTemplate is missing'],
      results: [{ kind: 'apply', outcome: 'would' }],
    });
  });
});

describe('tick -o yaml', () => {
  it('prints the entries as YAML', async () => {
    const tickKube: TickKube = {
      listChecks: async () => [],
      listStates: async () => [],
    } as unknown as TickKube;
    const lines: string[] = [];
    await tickCommand({
      kube: tickKube,
      dispatcher: { dispatch: async () => ({ ref: 'x' }) } as never,
      scope: 'all',
      identity: 't',
      clock: { nowMs: () => 0 },
      output: 'yaml',
      log: silentLog,
      write: (line) => lines.push(line),
    });
    expect(lines.join('\n')).toBe('entries: []');
  });
});
