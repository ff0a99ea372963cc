import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import { fleetTickDocument } from '../commands/fleet-tick.ts';
import type { LambdaFleet } from '../config/lambda-fleet.ts';
import type { LambdaTarget } from '../config/tick-options.ts';
import type { IdSource } from '../core/ids.ts';
import type { Log } from '../core/log.ts';
import { withSignal } from '../kube/kube-client.ts';
import { runFleetTick } from '../tick/fleet-tick.ts';
import type { TickConfig, TickDeps } from '../tick/tick.ts';
import { tickKube } from '../tick/tick-kube.ts';
import type { FleetClients } from './fleet-clients.ts';
import { lambdaDispatcher } from './lambda-invoke.ts';

/** Time kept back from a cluster's deadline for the invocation to log and answer before its own timeout. */
export const ANSWER_MARGIN_MS = 3_000;

/** One or more clusters of the fleet tick failed; the message names each and why (the others ticked). */
export class FleetTickError extends Error {
  override readonly name = 'FleetTickError';
  constructor(
    message: string,
    readonly result: ReturnType<typeof fleetTickDocument>,
  ) {
    super(message);
  }
}

/**
 * The tick Lambda over KHRUN_CLUSTERS: every cluster ticked side by side (lib/tick/fleet-tick.ts), each
 * within its deadline and the invocation's remaining time, its due checks sent to the runCheck function
 * in events that name the cluster. One log line per cluster. Resolves with the document keyed by cluster;
 * throws FleetTickError (the invocation fails, visibly) when a cluster or a dispatch failed, after every
 * other cluster has ticked.
 */
export async function lambdaFleetTick(opts: {
  fleet: LambdaFleet;
  clients: FleetClients;
  dispatch: LambdaTarget;
  credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  config: TickConfig;
  log: Log;
  ids: IdSource;
  /** Notifications: each cluster's tick delivers what its outcome writes left in outboxes. */
  notify?: TickDeps['notify'];
  remainingMs: () => number;
}): Promise<ReturnType<typeof fleetTickDocument>> {
  const { settings, members } = opts.fleet;
  const byName = new Map(members.map((m) => [m.name, m]));
  const outcomes = await runFleetTick(
    {
      clusters: members.map((m) => m.name),
      concurrency: settings.concurrency,
      deadlineMs: Math.max(1_000, Math.min(settings.deadlineMs, opts.remainingMs() - ANSWER_MARGIN_MS)),
      async open(cluster, signal) {
        const client = withSignal(await opts.clients.get(byName.get(cluster)!), signal);
        const { functionName, region, endpoint } = opts.dispatch;
        return {
          kube: tickKube(client),
          dispatcher: lambdaDispatcher({
            functionName,
            region,
            endpoint,
            credentials: opts.credentials,
            cluster,
          }),
          clock: client.clock,
          log: opts.log,
          ids: opts.ids,
          ...(opts.notify ? { notify: opts.notify } : {}),
        };
      },
    },
    opts.config,
  );
  for (const o of outcomes) {
    const elapsedMs = Math.round(o.elapsedMs);
    if (o.ok) {
      const dispatched = o.value.entries.filter((e) => e.result === 'dispatched').length;
      opts.log.info('cluster ticked', {
        cluster: o.cluster,
        checks: o.value.entries.length,
        dispatched,
        elapsedMs,
      });
    } else {
      opts.log.error('cluster tick failed', {
        cluster: o.cluster,
        reason: o.reason,
        timedOut: o.timedOut,
        elapsedMs,
      });
    }
  }
  const result = fleetTickDocument(outcomes);
  const down = outcomes.filter((o) => !o.ok).map((o) => `${o.cluster} (${o.reason})`);
  const failed = outcomes.flatMap((o) =>
    o.ok ? o.value.entries.filter((e) => e.result === 'failed').map((e) => `${o.cluster}: ${e.check}`) : [],
  );
  if (down.length || failed.length) {
    const parts = [
      ...(down.length
        ? [`tick failed in ${down.length} of ${outcomes.length} clusters: ${down.join('; ')}`]
        : []),
      ...(failed.length ? [`dispatch failed for ${failed.join(', ')}`] : []),
    ];
    throw new FleetTickError(parts.join('; '), result);
  }
  return result;
}
