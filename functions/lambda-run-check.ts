import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { lambdaKubeConfig } from '../lib/aws/lambda-kube-config.ts';
import { notifyConfigFromParameter } from '../lib/aws/notify-parameter.ts';
import { reportKeyFromParameter } from '../lib/aws/report-key-parameter.ts';
import { runBatchFromEvent, runFromEvent } from '../lib/aws/run-from-event.ts';
import { ssmParameterReader } from '../lib/aws/ssm-parameter.ts';
import { lambdaRunPlan } from '../lib/config/batch-options.ts';
import { takeOverSetting } from '../lib/config/takeover-options.ts';
import { createLogger, logPort } from '../lib/core/log.ts';
import { type KubeClient, runnerClient } from '../lib/kube/kube-client.ts';
import { runSettings } from '../lib/session/session.ts';

// runCheck: one iteration of one khcheck, HealthCheck or khjob per invocation (from the tick, a schedule
// rule or `aws lambda invoke`), event {"kind": "khcheck" | "khjob" | "healthcheck", "checkName": "...",
// "namespace": "..."} (lib/config/run-check-event.ts; kind defaults to khcheck). Checker pods report to the
// report function's URL (KH_EXTERNAL_REPORTING_URL; a HealthCheck's to its /check). The iteration stops
// KHRUN_BUDGET_MARGIN_SECONDS before the function's own timeout (which kills without warning) and leaves
// the run resumable; the next invocation adopts it. A batch event {"checks": [{"kind": "khcheck",
// "namespace": "...", "checkName": "..."}, ...]} (the tick's, at most 200 khchecks) runs each check as a full
// iteration of its own in this one invocation and returns {"checks": [one entry per check]}. Reporting URLs
// are signed with the report key: the SSM parameter KHRUN_REPORT_KEY_PARAMETER names, or KHRUN_REPORT_KEY.

// The warm runtime's one runner client object: its bound and clock outlive an invocation, as the kubeconfig does.
let runtime: { logger: Logger; client: KubeClient } | undefined;
// The key's parameter, cached while warm (PARAMETER_MAX_AGE_SECONDS), so a rotation is picked up.
const readParameter = ssmParameterReader();

export async function handler(event: unknown, context: Context) {
  // Options as `khrun run` builds them; a bad event, a ConfigError or a ReportKeyParameterError (the key's
  // parameter cannot be read) fails the invocation with its message, before any pod is started.
  const keyParameter = await reportKeyFromParameter(process.env, readParameter);
  const notifyParameter = await notifyConfigFromParameter(process.env, readParameter);
  const plan = lambdaRunPlan({ event, env: process.env, keyParameter, notifyParameter });
  const options = plan.options;
  if (!runtime) {
    const logger = createLogger({ service: 'khrun-run-check', level: options.logLevel });
    runtime = { logger, client: runnerClient(lambdaKubeConfig(options.cluster), logPort(logger)) };
  }
  const { logger, client } = runtime;
  logger.addContext(context);
  logger.refreshSampleRateCalculation();
  const budgetMs = context.getRemainingTimeInMillis() - options.budgetMarginMs;
  const shared = {
    kc: client.kc,
    client,
    runner: `lambda-${context.awsRequestId}`,
    report: options.report,
    signal: AbortSignal.timeout(Math.max(1_000, budgetMs)),
    log: logPort(logger),
    ...runSettings(options),
    takeOver: takeOverSetting({ flags: {}, env: process.env }),
  };
  // Each check's log lines name it (lib/batch/run-batch.ts); the batch's own lines name its size.
  if (plan.kind === 'batch') return runBatchFromEvent({ ...shared, checks: plan.options.checks });
  const { target } = plan.options;
  logger.appendKeys({ check: target.name, namespace: target.namespace, kind: target.kind });
  try {
    // A failed check is data: returned, not thrown. Only runner failures throw (no retries are configured).
    return await runFromEvent(target, shared);
  } finally {
    logger.resetKeys();
  }
}
