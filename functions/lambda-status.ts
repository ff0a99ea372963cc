import type { Logger } from '@aws-lambda-powertools/logger';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { type FleetClients, lambdaFleetClients } from '../lib/aws/fleet-clients.ts';
import { lambdaKubeConfig } from '../lib/aws/lambda-kube-config.ts';
import { lambdaStatusOptions } from '../lib/config/status-options.ts';
import { createLogger } from '../lib/core/log.ts';
import { type KubeClient, kubeClient, withSignal } from '../lib/kube/kube-client.ts';
import { handleFleetStatusRequest } from '../lib/status/fleet-routes.ts';
import { listHealthChecks } from '../lib/status/healthcheck-cache.ts';
import { listKhStates } from '../lib/status/state-cache.ts';
import { handleStatusRequest, type StatusResponse } from '../lib/status/status-routes.ts';

// status: Kuberhealthy v2's status JSON, the status page and the metrics behind a Lambda function URL.
// A Lambda keeps no watch between invocations, so each request lists the khstates and HealthChecks live.
// With KHRUN_CLUSTERS: every one of those clusters, each keyed by its name (docs/multi-cluster.md).

let runtime: { logger: Logger; client?: KubeClient; fleet?: FleetClients } | undefined;

export async function handler(
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> {
  // A ConfigError fails the invocation with its message (not a 500 that reads as "retry").
  const options = lambdaStatusOptions({ env: process.env });
  runtime ??= { logger: createLogger({ service: 'khrun-status', level: options.logLevel }) };
  const { logger } = runtime;
  logger.addContext(context);
  try {
    const { scope } = options;
    const namespaces = scope === 'all' ? undefined : scope.namespaces;
    const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
    const request = {
      url: `${event.rawPath || '/'}${query}`,
      accept: event.headers?.accept,
      hasBody: Boolean(event.body),
    };
    const currentMaster = `lambda-${context.functionName}`;
    let response: StatusResponse | undefined;
    if (options.fleet) {
      // Every cluster of KHRUN_CLUSTERS listed live, side by side, each within its deadline; one that cannot
      // be read is shown as such (lib/status/fleet-routes.ts).
      runtime.fleet ??= lambdaFleetClients(defaultProvider());
      const clients = runtime.fleet;
      response = await handleFleetStatusRequest(
        {
          clusters: options.fleet.members.map((member) => ({
            name: member.name,
            async read(signal) {
              const client = withSignal(await clients.get(member), signal);
              const [states, healthChecks] = await Promise.all([
                listKhStates(client, namespaces),
                listHealthChecks(client, namespaces),
              ]);
              return { states, healthChecks };
            },
          })),
          currentMaster,
          clock: { nowMs: Date.now },
          metrics: options.metrics,
          concurrency: options.fleet.settings.concurrency,
          deadlineMs: Math.max(
            1_000,
            Math.min(options.fleet.settings.deadlineMs, context.getRemainingTimeInMillis() - 2_000),
          ),
        },
        request,
      );
    } else {
      runtime.client ??= kubeClient(lambdaKubeConfig(options.cluster));
      const client = runtime.client;
      response = await handleStatusRequest(
        {
          states: () => listKhStates(client, namespaces),
          healthChecks: () => listHealthChecks(client, namespaces),
          currentMaster,
          clock: { nowMs: Date.now },
          metrics: options.metrics,
        },
        request,
      );
    }
    if (!response) return { statusCode: 404, headers: { 'content-type': 'text/plain' }, body: 'not found\n' };
    return { statusCode: response.status, headers: response.headers, body: response.body };
  } catch (error) {
    logger.error('status failed', { error: error instanceof Error ? error.message : String(error) });
    return {
      statusCode: 500,
      headers: { 'content-type': 'text/plain' },
      body: 'status unavailable; retry\n',
    };
  } finally {
    logger.resetKeys();
  }
}
