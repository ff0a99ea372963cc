import { truncateUtf8 } from '../core/text.ts';

/** How the metrics endpoint writes the `error` label, as v2's promMetricsConfig. */
export interface MetricsOptions {
  /** Drop the `error` label of kuberhealthy_check (v2's promMetricsConfig.suppressErrorLabel). */
  suppressErrorLabel?: boolean;
  /** Cut the `error` label to this many UTF-8 bytes (v2's errorLabelMaxLength); 0 or absent: no cut. */
  errorLabelMaxBytes?: number;
}

/** The `error` label as later v2 builds it (errors joined by `|`), cut at a character boundary if asked. */
export function errorLabel(errors: readonly string[], options: MetricsOptions = {}): string {
  const joined = errors.join('|');
  const max = options.errorLabelMaxBytes ?? 0;
  return max > 0 ? truncateUtf8(joined, max, '') : joined;
}
