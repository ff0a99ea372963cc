import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { MAX_BATCH_CHECKS } from '../../lib/batch/batch-entry.ts';
import { DEFAULT_BATCH_SIZE, DEFAULT_TICK_CONCURRENCY } from '../../lib/schedule/dispatch-due.ts';
import { deployedTickEnv } from '../bench/deployed-tick-env.ts';
import { readServerlessYaml } from '../integration/helpers/serverless-functions.ts';

// The tick's batch size and concurrency are written in six places besides lib/: an install, the chart, the
// Lambda stack and three pages. A default changed in one and not the others is a doc that lies (the
// environment page said 25 for a while after the default became 50).
const repoRoot = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(repoRoot, path), 'utf8');

/** The number after `label` on the row of `variable` in a markdown table; undefined when absent. */
function rowNumber(page: string, variable: string, label: RegExp): number | undefined {
  const row = page.split('\n').find((line) => line.startsWith(`| \`${variable}\``));
  const match = row && label.exec(row);
  return match ? Number(match[1]) : undefined;
}

describe('the tick defaults are the same everywhere they are written', () => {
  it('infra/deploy/tick.yaml sets the library defaults', () => {
    expect(deployedTickEnv()).toEqual({
      KHRUN_BATCH_SIZE: String(DEFAULT_BATCH_SIZE),
      KHRUN_TICK_CONCURRENCY: String(DEFAULT_TICK_CONCURRENCY),
    });
  });

  it("the chart's values.yaml and serverless.yml's batchSize parameter", () => {
    const values = parse(read('infra/helm/khrun/values.yaml'));
    expect(values.tick).toMatchObject({
      batchSize: DEFAULT_BATCH_SIZE,
      concurrency: DEFAULT_TICK_CONCURRENCY,
    });
    expect(readServerlessYaml(read('serverless.yml')).params?.default?.batchSize).toBe(DEFAULT_BATCH_SIZE);
  });

  it('docs/reference/environment.md: the defaults and the range', () => {
    const page = read('docs/reference/environment.md');
    expect(rowNumber(page, 'KHRUN_BATCH_SIZE', /default (\d+)/)).toBe(DEFAULT_BATCH_SIZE);
    expect(rowNumber(page, 'KHRUN_BATCH_SIZE', /1 to (\d+)/)).toBe(MAX_BATCH_CHECKS);
    expect(rowNumber(page, 'KHRUN_TICK_CONCURRENCY', /default (\d+)/)).toBe(DEFAULT_TICK_CONCURRENCY);
  });

  it('docs/install.md (the chart settings) and CHANGELOG.md', () => {
    const install = read('docs/install.md');
    expect(/`tick\.batchSize` \((\d+), 1 to (\d+)/.exec(install)?.slice(1).map(Number)).toEqual([
      DEFAULT_BATCH_SIZE,
      MAX_BATCH_CHECKS,
    ]);
    expect(/`tick\.concurrency` \((\d+):/.exec(install)?.[1]).toBe(String(DEFAULT_TICK_CONCURRENCY));
    expect(/`KHRUN_BATCH_SIZE` \(default (\d+)\)/.exec(read('CHANGELOG.md'))?.[1]).toBe(
      String(DEFAULT_BATCH_SIZE),
    );
  });
});
