import type { Logger } from '@aws-lambda-powertools/logger';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { lambdaDispatcher } from '../lib/aws/lambda-invoke.ts';
import { lambdaKubeConfig } from '../lib/aws/lambda-kube-config.ts';
import { notifyConfigFromParameter } from '../lib/aws/notify-parameter.ts';
import { ssmParameterReader } from '../lib/aws/ssm-parameter.ts';
import { takeOverSetting } from '../lib/config/takeover-options.ts';
import { lambdaTickOptions } from '../lib/config/tick-options.ts';
import { randomIds } from '../lib/core/ids.ts';
import { createLogger, logPort } from '../lib/core/log.ts';
import { type KubeClient, kubeClient } from '../lib/kube/kube-client.ts';
import { fetchSender } from '../lib/notify/http.ts';
import { runTick } from '../lib/tick/tick.ts';
import { tickKube } from '../lib/tick/tick-kube.ts';

// tick: on a schedule (every minute), one asynchronous runCheck invocation per batch of due checks.

// The warm runtime's one client object (unbounded: the tick bounds its claims itself, lib/schedule).
let runtime: { logger: Logger; client: KubeClient } | undefined;
// The notification configuration's parameter, cached while warm (as runCheck's report key).
const readParameter = ssmParameterReader();

export async function handler(_event: ScheduledEvent | undefined, context: Context) {
  // Options as `khrun tick --mode lambda` builds them; a ConfigError fails the invocation with its message.
  const notifyParameter = await notifyConfigFromParameter(process.env, readParameter);
  const options = lambdaTickOptions({ env: process.env, notifyParameter });
  if (!runtime) {
    const logger = createLogger({ service: 'khrun-tick', level: options.logLevel });
    runtime = { logger, client: kubeClient(lambdaKubeConfig(options.cluster), { log: logPort(logger) }) };
  }
  const { logger, client } = runtime;
  logger.addContext(context);
  try {
    const { functionName, region, endpoint } = options.dispatch;
    const entries = await runTick(
      {
        kube: tickKube(client),
        dispatcher: lambdaDispatcher({ functionName, region, endpoint, credentials: defaultProvider() }),
        // Due times are judged by the API server's time; the clock lives as long as the cached client.
        clock: client.clock,
        log: logPort(logger),
        ids: randomIds,
        ...(options.notify ? { notify: { config: options.notify, http: fetchSender } } : {}),
      },
      {
        scope: options.scope,
        identity: `lambda-${context.awsRequestId}`,
        timings: options.timings,
        takeOver: takeOverSetting({ flags: {}, env: process.env }),
        batchSize: options.batchSize,
        concurrency: options.concurrency,
      },
    );
    const failed = entries.filter((e) => e.result === 'failed');
    if (failed.length) throw new Error(`dispatch failed for ${failed.map((e) => e.check).join(', ')}`);
    return { dispatched: entries.filter((e) => e.result === 'dispatched').map((e) => e.check), entries };
  } finally {
    logger.resetKeys();
  }
}
