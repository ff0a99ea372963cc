import { ConfigError } from './config-error.ts';
import { objectName } from './namespaces.ts';
import { type ConfigInput, setting } from './setting.ts';

type NameFlags = {
  check?: string;
  job?: string;
  healthcheck?: string;
  [flag: string]: string | boolean | undefined;
};

/**
 * The Kuberhealthy v3 HealthCheck `khrun run` runs (--healthcheck, else HEALTHCHECK_NAME), or undefined
 * for another kind's run. A run is one object: naming a khcheck or a khjob too is refused, not guessed.
 */
export function healthCheckName(input: ConfigInput<NameFlags>): string | undefined {
  const hc = setting(input, { flags: ['healthcheck'], env: ['HEALTHCHECK_NAME'] });
  if (hc.text === undefined || hc.text.trim() === '') return undefined;
  for (const other of [
    setting(input, { flags: ['check'], env: ['CHECK_NAME'] }),
    setting(input, { flags: ['job'], env: ['KHJOB_NAME'] }),
  ]) {
    if (other.text === undefined || other.text.trim() === '') continue;
    throw new ConfigError({
      setting: `${hc.source} and ${other.source}`,
      value: `${hc.text}, ${other.text}`,
      problem: 'name a HealthCheck and another object; a run is one of them',
      remedy: 'give only --healthcheck NAME (HEALTHCHECK_NAME), --check NAME or --job NAME',
    });
  }
  return objectName(hc.text, hc.source, 'HealthCheck');
}
