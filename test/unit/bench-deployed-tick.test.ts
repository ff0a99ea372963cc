import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deployedTickEnv } from '../bench/deployed-tick-env.ts';

// The fleet benchmark spawns the tick with the settings of infra/deploy's khrun-tick CronJob, so it
// measures khrun as installed rather than the library's one-Job-per-check default.
describe("the deployed tick's settings (test/bench/deployed-tick-env.ts)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'khrun-tick-env-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads KHRUN_BATCH_SIZE and KHRUN_TICK_CONCURRENCY from infra/deploy/tick.yaml', () => {
    const env = deployedTickEnv();
    expect(Number(env.KHRUN_BATCH_SIZE)).toBeGreaterThan(1);
    expect(Number(env.KHRUN_TICK_CONCURRENCY)).toBeGreaterThan(1);
  });

  it('follows the file: a changed value is what the benchmark uses', () => {
    const file = join(dir, 'tick.yaml');
    const text = readFileSync(join(import.meta.dirname, '../../infra/deploy/tick.yaml'), 'utf8');
    writeFileSync(file, text.replace(/(name: KHRUN_BATCH_SIZE\s+value: )"\d+"/, '$1"7"'));
    expect(deployedTickEnv(file).KHRUN_BATCH_SIZE).toBe('7');
  });

  it('refuses a CronJob without the setting, naming the file and the variable', () => {
    const file = join(dir, 'bare.yaml');
    writeFileSync(
      file,
      'apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: khrun-tick}\nspec: {jobTemplate: {spec: {template: {spec: {containers: [{name: tick, env: [{name: KHRUN_TICK_CONCURRENCY, value: "32"}]}]}}}}}\n',
    );
    expect(() => deployedTickEnv(file)).toThrow(
      `${file}: the khrun-tick CronJob sets no literal KHRUN_BATCH_SIZE`,
    );
  });
});
