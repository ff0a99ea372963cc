import type { ReportHosting } from '../report/report-hosting.ts';
import type { ReportKey } from '../report/report-token.ts';
import { ConfigError } from './config-error.ts';
import { reportHostFromKubeconfig } from './kubeconfig-report-host.ts';
import { reportKey } from './report-key.ts';
import { type ConfigInput, type Flags, setting } from './setting.ts';
import { httpUrl, port } from './values.ts';

/** KH_EXTERNAL_REPORTING_URL: checker pods report to a shared server (khrun serve, the report Lambda). */
export function externalReportingUrl(input: ConfigInput<Flags>): string | undefined {
  return httpUrl(setting(input, { env: ['KH_EXTERNAL_REPORTING_URL'] }));
}

export interface ReportFlags {
  'report-host'?: string;
  'report-port'?: string;
  [flag: string]: string | boolean | undefined;
}

/** The report settings of `khrun run` that need no kubeconfig, validated. */
export interface ReportSettings {
  externalUrl: string | undefined;
  /** KHRUN_REPORT_KEY(_FILE): signs each run's URL on the shared server (it must hold the same key). */
  key: ReportKey | undefined;
  host: string | undefined;
  port: number;
}

/**
 * Where a `khrun run` process has its checker pods report: KH_EXTERNAL_REPORTING_URL when set (each run's
 * URL signed with KHRUN_REPORT_KEY when that is set); else an endpoint it hosts for the run, with a key of
 * its own, at --report-host / KHRUN_REPORT_HOST, else POD_IP (in a pod); port --report-port /
 * KHRUN_REPORT_PORT (default 0: a free one).
 */
export function reportSettings(input: ConfigInput<ReportFlags>): ReportSettings {
  return {
    port: port(setting(input, { flags: ['report-port'], env: ['KHRUN_REPORT_PORT'] }), {
      defaultPort: 0,
      allowZero: true,
    }),
    externalUrl: externalReportingUrl(input),
    key: reportKey(input),
    host: setting(input, { flags: ['report-host'], env: ['KHRUN_REPORT_HOST', 'POD_IP'] }).text,
  };
}

/**
 * The report hosting for the run: the settings, else the host `khrun local up` recorded in the
 * kubeconfig's cluster (kubeconfig-report-host.ts). No reachable host is a ConfigError: an address pods
 * cannot reach would only show up later as a timed-out run.
 */
export function reportHosting(
  settings: ReportSettings,
  kube: { files: readonly string[]; clusterName: string | undefined },
): ReportHosting {
  if (settings.externalUrl) {
    return { kind: 'external', url: settings.externalUrl, ...(settings.key ? { key: settings.key } : {}) };
  }
  const host =
    settings.host ?? (kube.clusterName ? reportHostFromKubeconfig(kube.files, kube.clusterName) : undefined);
  if (host) return { kind: 'hosted', host, port: settings.port };
  throw new ConfigError({
    setting: 'KHRUN_REPORT_HOST',
    problem: 'cannot tell at which address checker pods can reach this runner',
    remedy:
      'pass --report-host or set KHRUN_REPORT_HOST (POD_IP in a pod), or point pods at a shared report ' +
      'server with KH_EXTERNAL_REPORTING_URL (`khrun local up` records its host in the kubeconfig it writes)',
  });
}
