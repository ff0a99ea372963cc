import type { Log } from '../core/log.ts';
import type { KubeClient } from '../kube/kube-client.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { UnsignedPolicy } from '../report/authorize-report.ts';
import type { CallerLookup } from '../report/identify-caller.ts';
import type { ReportKey } from '../report/report-token.ts';

/** What the function URL's report handlers (report-event.ts, check-event.ts) are given. */
export interface ReportEventDeps {
  client: KubeClient;
  scope: NamespaceScope;
  log: Log;
  server: string;
  /** Checks signed reporting URLs (KHRUN_REPORT_KEY); undefined: none configured. */
  reportKey: ReportKey | undefined;
  /** Unsigned reports: refuse or header. Never by source address: pods reach a Lambda through NAT. */
  unsigned: Exclude<UnsignedPolicy, 'header-and-ip'>;
  /**
   * Where unsigned reports' pods are looked up; a warm function passes one it keeps (shared-lookup.ts), so
   * concurrent and repeated lookups share a LIST. Default: a fresh one per event.
   */
  lookup?: CallerLookup;
  /** The invocation's remaining time (context.getRemainingTimeInMillis); a held report answers 500 before it. */
  remainingMs?: () => number;
}

/** Kept back from the invocation's remaining time, so a report held for the API server is answered in time. */
export const ANSWER_MARGIN_MS = 2_000;
