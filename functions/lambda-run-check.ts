import type { Logger } from '@aws-lambda-powertools/logger';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Context } from 'aws-lambda';
import { lambdaKubeConfig } from '../lib/aws/lambda-kube-config.ts';
import { resultJson } from '../lib/commands/exit-codes.ts';
import { lambdaRunCheckOptions } from '../lib/config/run-options.ts';
import { takeOverSetting } from '../lib/config/takeover-options.ts';
import { createLogger, logPort } from '../lib/core/log.ts';
import { CheckNotFoundError } from '../lib/run/errors.ts';
import { runCheck } from '../lib/run/invocation.ts';

// runCheck: one iteration of one check per invocation (from the tick, a schedule rule or `aws lambda
// invoke`), event {"checkName": "...", "namespace": "..."}. Checker pods report to the report function's
// URL (KH_EXTERNAL_REPORTING_URL). The iteration stops KHRUN_BUDGET_MARGIN_SECONDS before the function's
// own timeout (which kills without warning) and leaves the run resumable; the next invocation adopts it.

let runtime: { logger: Logger; kc: KubeConfig } | undefined;

export async function handler(event: unknown, context: Context) {
  // Options as `khrun run` builds them; a ConfigError fails the invocation with its message.
  const options = lambdaRunCheckOptions({ event, env: process.env });
  runtime ??= {
    logger: createLogger({ service: 'khrun-run-check', level: options.logLevel }),
    kc: lambdaKubeConfig(options.cluster),
  };
  const { logger, kc } = runtime;
  const { namespace, checkName } = options;
  logger.addContext(context);
  logger.refreshSampleRateCalculation();
  logger.appendKeys({ check: checkName, namespace });
  try {
    const budgetMs = context.getRemainingTimeInMillis() - options.budgetMarginMs;
    const result = await runCheck({
      kc,
      namespace,
      checkName,
      runner: `lambda-${context.awsRequestId}`,
      report: options.report,
      signal: AbortSignal.timeout(Math.max(1_000, budgetMs)),
      log: logPort(logger),
      leaseMs: options.leaseMs,
      takeOver: takeOverSetting({ flags: {}, env: process.env }),
    });
    // A failed check is data: returned, not thrown. Only runner failures throw (no retries are configured).
    return resultJson(result, { namespace, name: checkName });
  } catch (error) {
    if (error instanceof CheckNotFoundError)
      return { check: `${namespace}/${checkName}`, result: 'not-found', reason: error.message };
    throw error;
  } finally {
    logger.resetKeys();
  }
}
