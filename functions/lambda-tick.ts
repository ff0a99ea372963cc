import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { durationMs, lambdaKubeConfig, lambdaScope } from '../lib/aws/lambda-config.ts';
import { lambdaDispatcher } from '../lib/aws/lambda-invoke.ts';
import { createLogger, type LogLevel, logPort } from '../lib/core/log.ts';
import { DEFAULT_DUE_TIMINGS } from '../lib/schedule/due.ts';
import { runTick } from '../lib/schedule/tick.ts';
import { tickKube } from '../lib/schedule/tick-kube.ts';

// tick: on a schedule (every minute), one asynchronous runCheck invocation per due check.

const env = process.env;
const logger = createLogger({
  service: 'khrun-tick',
  level: (env.POWERTOOLS_LOG_LEVEL as LogLevel) ?? 'INFO',
});
let kc: ReturnType<typeof lambdaKubeConfig> | undefined;

export async function handler(_event: ScheduledEvent | undefined, context: Context) {
  logger.addContext(context);
  try {
    const functionName = env.RUN_CHECK_FUNCTION;
    const region = env.AWS_REGION;
    if (!functionName || !region) throw new Error('RUN_CHECK_FUNCTION and AWS_REGION must be set');
    kc ??= lambdaKubeConfig(env);
    const entries = await runTick(
      {
        kube: tickKube(kc),
        dispatcher: lambdaDispatcher({
          functionName,
          region,
          credentials: defaultProvider(),
          endpoint: env.KHRUN_LAMBDA_ENDPOINT || undefined,
        }),
        clock: { nowMs: () => Date.now() },
        log: logPort(logger),
      },
      {
        scope: lambdaScope(env),
        identity: `lambda-${context.awsRequestId}`,
        timings: {
          ...DEFAULT_DUE_TIMINGS,
          maxFirstRunJitterMs: durationMs(
            env,
            'KHRUN_FIRST_RUN_JITTER',
            DEFAULT_DUE_TIMINGS.maxFirstRunJitterMs,
          ),
        },
      },
    );
    const failed = entries.filter((e) => e.result === 'failed');
    if (failed.length) throw new Error(`dispatch failed for ${failed.map((e) => e.check).join(', ')}`);
    return { dispatched: entries.filter((e) => e.result === 'dispatched').map((e) => e.check), entries };
  } finally {
    logger.resetKeys();
  }
}
