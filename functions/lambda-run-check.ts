import type { Context } from 'aws-lambda';
import { lambdaKubeConfig, secondsMs } from '../lib/aws/lambda-config.ts';
import type { RunCheckEvent } from '../lib/aws/lambda-invoke.ts';
import { resultJson } from '../lib/commands/exit-codes.ts';
import { createLogger, type LogLevel, logPort } from '../lib/core/log.ts';
import { CheckNotFoundError } from '../lib/run/errors.ts';
import { runCheck } from '../lib/run/invocation.ts';

// runCheck: one iteration of one check per invocation (from the tick, a schedule rule or `aws lambda
// invoke`). Checker pods report to the report function's URL (KH_EXTERNAL_REPORTING_URL). The iteration
// stops BUDGET_MARGIN before the function's own timeout (which kills without warning) and leaves the run
// resumable; the next invocation adopts it.

const env = process.env;
const logger = createLogger({
  service: 'khrun-run-check',
  level: (env.POWERTOOLS_LOG_LEVEL as LogLevel) ?? 'INFO',
});
let kc: ReturnType<typeof lambdaKubeConfig> | undefined;

export async function handler(event: Partial<RunCheckEvent> | undefined, context: Context) {
  logger.addContext(context);
  logger.refreshSampleRateCalculation();
  try {
    const checkName = event?.checkName ?? env.CHECK_NAME;
    const namespace = event?.namespace ?? env.CHECK_NAMESPACE ?? 'kuberhealthy';
    const reportingUrl = env.KH_EXTERNAL_REPORTING_URL;
    if (!checkName)
      return { result: 'invalid-event', reason: 'the event needs {"checkName": "...", "namespace": "..."}' };
    if (!reportingUrl) throw new Error('KH_EXTERNAL_REPORTING_URL is not set (the report function URL)');
    kc ??= lambdaKubeConfig(env);
    const budgetMs = context.getRemainingTimeInMillis() - secondsMs(env, 'KHRUN_BUDGET_MARGIN_SECONDS', 30);
    logger.appendKeys({ check: checkName, namespace });
    try {
      const result = await runCheck({
        kc,
        namespace,
        checkName,
        runner: `lambda-${context.awsRequestId}`,
        report: { kind: 'external', url: reportingUrl },
        signal: AbortSignal.timeout(Math.max(1_000, budgetMs)),
        log: logPort(logger),
        leaseMs: env.KHRUN_LEASE_SECONDS ? Number(env.KHRUN_LEASE_SECONDS) * 1000 : undefined,
      });
      // A failed check is data: returned, not thrown. Only runner failures throw (no retries are configured).
      return resultJson(result, { namespace, name: checkName });
    } catch (error) {
      if (error instanceof CheckNotFoundError)
        return { check: `${namespace}/${checkName}`, result: 'not-found', reason: error.message };
      throw error;
    }
  } finally {
    logger.resetKeys();
  }
}
