import type { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { lambdaKubeConfig } from '../lib/aws/lambda-kube-config.ts';
import { lambdaStatusOptions } from '../lib/config/status-options.ts';
import { createLogger } from '../lib/core/log.ts';
import { type KubeClient, kubeClient } from '../lib/kube/kube-client.ts';
import { listHealthChecks } from '../lib/status/healthcheck-cache.ts';
import { listKhStates } from '../lib/status/state-cache.ts';
import { handleStatusRequest } from '../lib/status/status-routes.ts';

// status: Kuberhealthy v2's status JSON, the status page and the metrics behind a Lambda function URL.
// A Lambda keeps no watch between invocations, so each request lists the khstates and HealthChecks live.

let runtime: { logger: Logger; client: KubeClient } | undefined;

export async function handler(
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> {
  // A ConfigError fails the invocation with its message (not a 500 that reads as "retry").
  const options = lambdaStatusOptions({ env: process.env });
  runtime ??= {
    logger: createLogger({ service: 'khrun-status', level: options.logLevel }),
    client: kubeClient(lambdaKubeConfig(options.cluster)),
  };
  const { logger, client } = runtime;
  logger.addContext(context);
  try {
    const { scope } = options;
    const namespaces = scope === 'all' ? undefined : scope.namespaces;
    const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
    const response = await handleStatusRequest(
      {
        states: () => listKhStates(client, namespaces),
        healthChecks: () => listHealthChecks(client, namespaces),
        currentMaster: `lambda-${context.functionName}`,
        clock: { nowMs: Date.now },
        metrics: options.metrics,
      },
      { url: `${event.rawPath || '/'}${query}`, accept: event.headers?.accept, hasBody: Boolean(event.body) },
    );
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
