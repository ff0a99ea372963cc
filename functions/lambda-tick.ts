import type { Logger } from '@aws-lambda-powertools/logger';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { lambdaDispatcher } from '../lib/aws/lambda-invoke.ts';
import { lambdaKubeConfig } from '../lib/aws/lambda-kube-config.ts';
import { takeOverSetting } from '../lib/config/takeover-options.ts';
import { lambdaTickOptions } from '../lib/config/tick-options.ts';
import { randomIds } from '../lib/core/ids.ts';
import { createLogger, logPort } from '../lib/core/log.ts';
import { apiServerClock } from '../lib/kube/server-clock.ts';
import { runTick } from '../lib/schedule/tick.ts';
import { tickKube } from '../lib/schedule/tick-kube.ts';

// tick: on a schedule (every minute), one asynchronous runCheck invocation per batch of due checks.

let runtime: { logger: Logger; kc: KubeConfig } | undefined;

export async function handler(_event: ScheduledEvent | undefined, context: Context) {
  // Options as `khrun tick --mode lambda` builds them; a ConfigError fails the invocation with its message.
  const options = lambdaTickOptions({ env: process.env });
  runtime ??= {
    logger: createLogger({ service: 'khrun-tick', level: options.logLevel }),
    kc: lambdaKubeConfig(options.cluster),
  };
  const { logger, kc } = runtime;
  logger.addContext(context);
  try {
    const { functionName, region, endpoint } = options.dispatch;
    const entries = await runTick(
      {
        kube: tickKube(kc),
        dispatcher: lambdaDispatcher({ functionName, region, endpoint, credentials: defaultProvider() }),
        // Due times are judged by the API server's time; the clock lives as long as the cached kubeconfig.
        clock: apiServerClock(kc, logPort(logger)),
        log: logPort(logger),
        ids: randomIds,
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
