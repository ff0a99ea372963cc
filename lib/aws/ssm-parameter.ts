import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import type { SSMClientConfig } from '@aws-sdk/client-ssm';
import type { ParameterReader } from './report-key-parameter.ts';

/**
 * How long a warm function keeps a parameter's value: a key rotated in SSM reaches every function within
 * this, and a busy report function makes one GetParameter per 5 minutes, not one per report.
 */
export const PARAMETER_MAX_AGE_SECONDS = 300;

/**
 * The real ParameterReader: SSM GetParameter WithDecryption through Powertools' SSMProvider, each value
 * cached in memory for maxAgeSeconds (a failed read is not cached: the next call asks again). The client is
 * made on the first read, so a function that reads no parameter never makes one. Region and credentials
 * are the SDK's defaults (AWS_REGION and the function's role); clientConfig overrides them (tests point
 * `endpoint` at a local server). Rejects with Powertools' error, whose cause is the SDK's.
 */
export function ssmParameterReader(
  opts: { maxAgeSeconds?: number; clientConfig?: SSMClientConfig } = {},
): ParameterReader {
  let provider: SSMProvider | undefined;
  const maxAge = opts.maxAgeSeconds ?? PARAMETER_MAX_AGE_SECONDS;
  return async (name) => {
    provider ??= new SSMProvider({ clientConfig: opts.clientConfig ?? {} });
    return provider.get(name, { decrypt: true, maxAge, throwOnMissing: true });
  };
}
