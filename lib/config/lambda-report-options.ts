import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { UnsignedPolicy } from '../report/authorize-report.ts';
import type { ReportKey } from '../report/report-token.ts';
import { logLevel } from './common.ts';
import { type LambdaClusters, lambdaClusters } from './lambda-fleet.ts';
import { khrunNamespaces } from './namespaces.ts';
import { nattedUnsignedPolicy, reportKey, requireKeyOrOptIn } from './report-key.ts';
import type { ParameterKeyText } from './report-key-parameter.ts';
import { type ConfigInput, type Env, type Flags, NO_FLAGS } from './setting.ts';

/** Not a fan-out's: one report is one cluster's. */
const REPORT_DEADLINE_MS = 15_000;

export type LambdaReportOptions = LambdaReportFields & LambdaClusters;

interface LambdaReportFields {
  scope: NamespaceScope;
  /**
   * The key the runCheck function signs reporting URLs with: from the SSM parameter KHRUN_REPORT_KEY_PARAMETER
   * names (read by the handler), else KHRUN_REPORT_KEY(_FILE). Required: undefined only with
   * KHRUN_ALLOW_UNSIGNED_REPORTS=true.
   */
  reportKey: ReportKey | undefined;
  /** KHRUN_REPORT_UNSIGNED: refuse (default with a key) or header (default without); never by source IP. */
  unsigned: Exclude<UnsignedPolicy, 'header-and-ip'>;
  logLevel: LogLevel;
}

/**
 * The report Lambda: the report endpoint behind a function URL. Pods reach it through NAT, so it never
 * identifies them by source address. keyParameter: the text of KHRUN_REPORT_KEY_PARAMETER's parameter, as
 * the handler read it (lib/aws/report-key-parameter.ts); checked here like any other key.
 */
export function lambdaReportOptions(input: {
  env: Env;
  keyParameter?: ParameterKeyText;
}): LambdaReportOptions {
  const config: ConfigInput<Flags> = { flags: {}, env: input.env, flagLabel: NO_FLAGS };
  const key = reportKey(config, input.keyParameter);
  const options: LambdaReportOptions = {
    scope: khrunNamespaces(config),
    reportKey: key,
    unsigned: nattedUnsignedPolicy(config, key),
    logLevel: logLevel(config),
    // A report is one request to one cluster: the fan-out's bounds do not apply.
    ...lambdaClusters(config, REPORT_DEADLINE_MS),
  };
  requireKeyOrOptIn(config, key, { hasFlag: false, parameter: true });
  return options;
}
