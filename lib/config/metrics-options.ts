import type { MetricsOptions } from '../status/error-label.ts';
import { type ConfigInput, type Flags, flagSet, setting } from './setting.ts';
import { bool, integer } from './values.ts';

/**
 * The metrics' `error` label, for `khrun serve` and the status Lambda alike: dropped with --no-error-label /
 * KHRUN_SUPPRESS_ERROR_LABEL=true, cut to --error-label-max-bytes / KHRUN_ERROR_LABEL_MAX_BYTES (0: no cut).
 */
export function metricsOptions(input: ConfigInput<Flags>): MetricsOptions {
  return {
    suppressErrorLabel:
      flagSet(input, 'no-error-label') ||
      bool(setting(input, { env: ['KHRUN_SUPPRESS_ERROR_LABEL'] }), false),
    errorLabelMaxBytes: integer(
      setting(input, { flags: ['error-label-max-bytes'], env: ['KHRUN_ERROR_LABEL_MAX_BYTES'] }),
      { min: 0, what: 'bytes' },
    ),
  };
}
