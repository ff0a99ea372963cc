import type { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { lambdaKubeConfig } from '../lib/aws/lambda-kube-config.ts';
import { reportFromUrlEvent } from '../lib/aws/report-event.ts';
import { reportKeyFromParameter } from '../lib/aws/report-key-parameter.ts';
import { ssmParameterReader } from '../lib/aws/ssm-parameter.ts';
import { lambdaReportOptions } from '../lib/config/serve-options.ts';
import { createLogger, logPort } from '../lib/core/log.ts';
import { type KubeClient, kubeClient } from '../lib/kube/kube-client.ts';
import type { CallerLookup } from '../lib/report/identify-caller.ts';
import { kubeCallerLookup } from '../lib/report/kube-lookup.ts';
import { sharedLookup } from '../lib/report/shared-lookup.ts';

// report: the report endpoint behind a Lambda function URL (payload format 2.0). With the report key (the SSM
// parameter KHRUN_REPORT_KEY_PARAMETER names, or KHRUN_REPORT_KEY; the runCheck function's too) each checker
// pod reports to a URL signed for its run; anything else is refused before any API request. Pods reach it
// through NAT, so it never identifies them by source address.

// The warm runtime's one client object (its clock outlives an invocation) and its shared lookup.
let runtime: { logger: Logger; client: KubeClient; lookup: CallerLookup } | undefined;
// The key's parameter, cached while warm (PARAMETER_MAX_AGE_SECONDS), so a rotation is picked up.
const readParameter = ssmParameterReader();

export async function handler(
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> {
  // A ConfigError, or a ReportKeyParameterError (the key's parameter cannot be read), fails the invocation
  // with its message: a report is never taken unsigned for want of the key.
  const keyParameter = await reportKeyFromParameter(process.env, readParameter);
  const options = lambdaReportOptions({ env: process.env, keyParameter });
  if (!runtime) {
    const logger = createLogger({ service: 'khrun-report', level: options.logLevel });
    const client = kubeClient(lambdaKubeConfig(options.cluster), { log: logPort(logger) });
    runtime = {
      logger,
      client,
      // Kept while the function is warm: unsigned reports of one run (or a flood naming one) share a LIST.
      lookup: sharedLookup(kubeCallerLookup(client, options.scope, { ipLookupWaitMs: 0 }), {
        nowMs: () => performance.now(),
      }),
    };
  }
  const { logger, client, lookup } = runtime;
  logger.addContext(context);
  try {
    return await reportFromUrlEvent(event, {
      client,
      scope: options.scope,
      log: logPort(logger),
      server: `lambda-${context.functionName}`,
      reportKey: options.reportKey,
      unsigned: options.unsigned,
      lookup,
      remainingMs: () => context.getRemainingTimeInMillis(),
    });
  } finally {
    logger.resetKeys();
  }
}
