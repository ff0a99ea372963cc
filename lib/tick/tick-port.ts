import type { HealthCheckWrites } from '../healthcheck/dispatch-claims.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import type { KhJob } from '../job/khjob.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { ReadNamespaceDefaults } from '../notify/policy-source.ts';
import type { KhCheck, KhState } from '../state/resources.ts';

/** What a tick needs from the API server, shaped like the domain; the real one is tick-kube.ts. */
export interface TickKube {
  listChecks(scope: NamespaceScope): Promise<KhCheck[]>;
  listStates(scope: NamespaceScope): Promise<KhState[]>;
  readState(namespace: string, name: string): Promise<KhState | null>;
  /** Throws WriteConflict when it exists already; writer names the loop (user agent). */
  createState(state: KhState, writer?: string): Promise<KhState>;
  /** metadata.resourceVersion is the precondition; throws WriteConflict on 409. */
  replaceState(state: KhState, writer?: string): Promise<KhState>;
  /** The khjobs in scope ([] where the khjob CRD is not installed); absent: the tick runs no khjobs. */
  listJobs?(scope: NamespaceScope): Promise<KhJob[]>;
  /** The HealthChecks in scope ([] where v3's CRD is not installed), and the writes of their dispatch claim. */
  listHealthChecks?(scope: NamespaceScope): Promise<HealthCheck[]>;
  healthChecks?: HealthCheckWrites;
  /** The namespace's notification defaults (ConfigMap khrun-notifications), for the outbox sweep's holds. */
  readNotifyDefaults?: ReadNamespaceDefaults;
}
