import type { ReportKey } from './report-token.ts';

/** Where a session's checker pods report. */
export type ReportHosting =
  /** key: the deployment's (KHRUN_REPORT_KEY), to sign each run's URL; without it pods get url as is. */
  | { kind: 'external'; url: string; key?: ReportKey }
  /** An endpoint this process hosts for the session's runs: a key of its own, signed URLs only. */
  | { kind: 'hosted'; host: string; port: number; maxBodyBytes?: number };
