import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { lambdaKubeConfig, lambdaScope, secondsMs } from '../lib/aws/lambda-config.ts';
import { reportFromUrlEvent } from '../lib/aws/report-event.ts';
import { createLogger, type LogLevel, logPort } from '../lib/core/log.ts';

// report: the report endpoint behind a Lambda function URL (payload format 2.0). Checker pods reach it
// through NAT, so their source address says nothing: reports must carry the kh-run-uuid header, as
// Kuberhealthy v2.5+'s Go client and KH_RUN_UUID-aware clients send it.

const env = process.env;
const logger = createLogger({
  service: 'khrun-report',
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
    return await reportFromUrlEvent(event, {
      kc,
      scope: lambdaScope(env),
      log: logPort(logger),
      server: `lambda-${context.functionName}`,
      ipLookupWaitMs: secondsMs(env, 'KHRUN_IP_LOOKUP_WAIT_SECONDS', 2),
    });
  } finally {
    logger.resetKeys();
  }
}
