import type { Logger } from '@aws-lambda-powertools/logger';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { invokeAsync } from '../lib/aws/lambda-invoke.ts';
import { lambdaTriggerOptions } from '../lib/config/trigger-options.ts';
import { createLogger, logPort } from '../lib/core/log.ts';
import { triggerFromUrlEvent } from '../lib/trigger/url-event.ts';

// trigger: Kuberhealthy v3's `POST /api/run?namespace=NS&healthcheck=NAME` behind a function URL with
// AuthType AWS_IAM (never NONE): a scheduler outside AWS (GitHub Actions, Cloud Scheduler, cron with curl
// --aws-sigv4) signs the request; an accepted one becomes one asynchronous runCheck invocation, answered
// 202 at once. The outcome is recorded in the khstate (and in the runCheck invocation's result).
// IAM is the only credential here: a SigV4-signed request already uses the Authorization header.

let runtime: { logger: Logger; credentials: ReturnType<typeof defaultProvider> } | undefined;

export async function handler(
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> {
  // A ConfigError fails the invocation with its message.
  const options = lambdaTriggerOptions({ env: process.env });
  runtime ??= {
    logger: createLogger({ service: 'khrun-trigger', level: options.logLevel }),
    credentials: defaultProvider(),
  };
  const { logger, credentials } = runtime;
  logger.addContext(context);
  try {
    const { functionName, region, endpoint } = options.dispatch;
    return await triggerFromUrlEvent(event, {
      scope: options.scope,
      // With KHRUN_CLUSTERS each request names one of them (`cluster=`), and the runCheck event carries it.
      clusters: options.clusters,
      log: logPort(logger),
      dispatch: (target) =>
        invokeAsync(
          { functionName, region, endpoint, credentials },
          {
            checkName: target.checkName,
            namespace: target.namespace,
            ...(target.cluster === undefined ? {} : { cluster: target.cluster }),
          },
        ),
    });
  } finally {
    logger.resetKeys();
  }
}
