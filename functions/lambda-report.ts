import type { Logger } from '@aws-lambda-powertools/logger';
import type { KubeConfig } from '@kubernetes/client-node';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { lambdaKubeConfig } from '../lib/aws/lambda-kube-config.ts';
import { reportFromUrlEvent } from '../lib/aws/report-event.ts';
import { lambdaReportOptions } from '../lib/config/serve-options.ts';
import { createLogger, logPort } from '../lib/core/log.ts';

// report: the report endpoint behind a Lambda function URL (payload format 2.0). Checker pods reach it
// through NAT, so their source address says nothing: reports must carry the kh-run-uuid header, as
// Kuberhealthy v2.5+'s Go client and KH_RUN_UUID-aware clients send it.

let runtime: { logger: Logger; kc: KubeConfig } | undefined;

export async function handler(
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> {
  // A ConfigError fails the invocation with its message.
  const options = lambdaReportOptions({ env: process.env });
  runtime ??= {
    logger: createLogger({ service: 'khrun-report', level: options.logLevel }),
    kc: lambdaKubeConfig(options.cluster),
  };
  const { logger, kc } = runtime;
  logger.addContext(context);
  try {
    return await reportFromUrlEvent(event, {
      kc,
      scope: options.scope,
      log: logPort(logger),
      server: `lambda-${context.functionName}`,
      ipLookupWaitMs: options.ipLookupWaitMs,
    });
  } finally {
    logger.resetKeys();
  }
}
