import type { LogLevel } from '../core/log.ts';
import type { NamespaceScope } from '../kube/scope.ts';
import type { MetricsOptions } from '../status/error-label.ts';
import {
  asksForFleet,
  cliFleet,
  type FleetCluster,
  type FleetFlags,
  type FleetSettings,
  fleetSettings,
} from './clusters.ts';
import { identity, logLevel } from './common.ts';
import { ConfigError } from './config-error.ts';
import { metricsOptions } from './metrics-options.ts';
import { namespacesScope } from './namespaces.ts';
import { type RunnerTemplateRef, runnerTemplate } from './runner-template.ts';
import type { ServeFlags } from './serve-options.ts';
import { type ConfigInput, flagSet, setting } from './setting.ts';
import { triggerToken } from './trigger-options.ts';
import { port, secondsMs } from './values.ts';
/** `khrun serve` over several clusters (`--context A,B`, `--all-contexts`): status and the trigger only. */
export interface ServeFleetOptions {
  clusters: FleetCluster[];
  settings: FleetSettings;
  scope: NamespaceScope;
  host: string;
  port: number;
  identity: string;
  requestTimeoutMs: number | undefined;
  drainMs: number;
  metrics: MetricsOptions;
  /**
   * `POST /api/run?cluster=C&...` (with a token configured): a runner Job in cluster C from its runner
   * PodTemplate (--runner-namespace, --pod-template), as the tick dispatches one; answered 202 at once.
   */
  trigger: { token: string; runner: RunnerTemplateRef } | undefined;
  logLevel: LogLevel;
}

/**
 * `khrun serve --context A,B` / `--all-contexts`: the status routes over every cluster and the trigger into
 * any of them; undefined when one cluster is asked for (serveOptions). A fleet server takes no reports
 * (each cluster's runners report to their own endpoint or their cluster's khrun-server), so it needs no
 * report key; reports sent to it are refused.
 */
export function serveFleetOptions(
  input: ConfigInput<ServeFlags & FleetFlags>,
): ServeFleetOptions | undefined {
  if (!asksForFleet(input)) return undefined;
  if (flagSet(input, 'no-status'))
    throw new ConfigError({
      setting: '--no-status',
      problem: 'leaves a server over several clusters nothing to serve but the trigger',
      remedy: 'leave it out; a server over several clusters takes no reports',
    });
  const timeout = setting(input, { flags: ['request-timeout-seconds'] });
  const host = setting(input, { flags: ['host'], env: ['KHRUN_SERVE_HOST'] }).text ?? '0.0.0.0';
  const token = triggerToken(input);
  const options = {
    scope: namespacesScope(input, ['KHRUN_NAMESPACES']),
    host,
    port: port(setting(input, { flags: ['port'], env: ['KHRUN_SERVE_PORT'] }), {
      defaultPort: 8080,
      allowZero: true,
    }),
    identity: identity(input, 'khrun-serve'),
    requestTimeoutMs: timeout.text === undefined ? undefined : secondsMs(timeout, { defaultSeconds: 30 }),
    drainMs: secondsMs(setting(input, { flags: ['drain-seconds'] }), { defaultSeconds: 10, allowZero: true }),
    metrics: metricsOptions(input),
    trigger: token === undefined ? undefined : { token, runner: runnerTemplate(input, 'runner-namespace') },
    logLevel: logLevel(input),
    settings: fleetSettings(input, SERVE_FLEET_DEADLINE_MS),
  };
  return { ...options, clusters: cliFleet(input) ?? [] };
}

/** Each cluster's time to answer one status request on a server over several. */
const SERVE_FLEET_DEADLINE_MS = 5_000;
