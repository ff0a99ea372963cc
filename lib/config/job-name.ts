import { ConfigError } from './config-error.ts';
import { objectName } from './namespaces.ts';
import { type ConfigInput, setting } from './setting.ts';

/**
 * The khjob `khrun run` runs once (--job, else KHJOB_NAME), or undefined for a khcheck's run. A run is one
 * object: naming a khcheck too (--check, CHECK_NAME) is refused rather than guessed.
 */
export function khjobName(
  input: ConfigInput<{ check?: string; job?: string; [flag: string]: string | boolean | undefined }>,
): string | undefined {
  const job = setting(input, { flags: ['job'], env: ['KHJOB_NAME'] });
  if (job.text === undefined || job.text.trim() === '') return undefined;
  const check = setting(input, { flags: ['check'], env: ['CHECK_NAME'] });
  if (check.text !== undefined && check.text.trim() !== '') {
    throw new ConfigError({
      setting: `${job.source} and ${check.source}`,
      value: `${job.text}, ${check.text}`,
      problem: 'name both a khjob and a khcheck; a run is one of them',
      remedy: 'give either --job NAME (KHJOB_NAME) or --check NAME (CHECK_NAME)',
    });
  }
  return objectName(job.text, job.source, 'khjob');
}
