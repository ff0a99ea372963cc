import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { lambdaKubeConfig, lambdaScope } from '../lib/aws/lambda-config.ts';
import { createLogger, type LogLevel } from '../lib/core/log.ts';
import { listKhStates } from '../lib/status/state-cache.ts';
import { handleStatusRequest } from '../lib/status/status-routes.ts';

// status: Kuberhealthy v2's status JSON, the status page and the metrics behind a Lambda function URL.
// A Lambda keeps no watch between invocations, so each request lists the khstates live.

const env = process.env;
const logger = createLogger({
  service: 'khrun-status',
  level: (env.POWERTOOLS_LOG_LEVEL as LogLevel) ?? 'INFO',
});
let kc: ReturnType<typeof lambdaKubeConfig> | undefined;

export async function handler(
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> {
  logger.addContext(context);
  try {
    kc ??= lambdaKubeConfig(env);
    const client = kc;
    const scope = lambdaScope(env);
    const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
    const response = await handleStatusRequest(
      {
        states: () => listKhStates(client, scope === 'all' ? undefined : scope.namespaces),
        currentMaster: `lambda-${context.functionName}`,
        clock: { nowMs: Date.now },
        metrics: { suppressErrorLabel: env.KHRUN_SUPPRESS_ERROR_LABEL === 'true' },
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
