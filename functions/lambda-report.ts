import type { Logger } from '@aws-lambda-powertools/logger';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { fleetKubeConfig } from '../lib/aws/fleet-clients.ts';
import { lambdaKubeConfig } from '../lib/aws/lambda-kube-config.ts';
import { routeReportToCluster } from '../lib/aws/report-cluster.ts';
import { reportFromUrlEvent } from '../lib/aws/report-event.ts';
import { reportKeyFromParameter } from '../lib/aws/report-key-parameter.ts';
import { ssmParameterReader } from '../lib/aws/ssm-parameter.ts';
import { lambdaReportOptions } from '../lib/config/lambda-report-options.ts';
import { createLogger, logPort } from '../lib/core/log.ts';
import { type KubeClient, kubeClient } from '../lib/kube/kube-client.ts';
import type { NamespaceScope } from '../lib/kube/scope.ts';
import type { CallerLookup } from '../lib/report/identify-caller.ts';
import { kubeCallerLookup } from '../lib/report/kube-lookup.ts';
import { sharedLookup } from '../lib/report/shared-lookup.ts';

// report: the report endpoint behind a Lambda function URL (payload format 2.0). With the report key (the SSM
// parameter KHRUN_REPORT_KEY_PARAMETER names, or KHRUN_REPORT_KEY; the runCheck function's too) each checker
// pod reports to a URL signed for its run; anything else is refused before any API request. Pods reach it
// through NAT, so it never identifies them by source address. With KHRUN_CLUSTERS, one function takes the
// reports of every cluster of the fleet: each reporting URL names its cluster (lib/report/cluster-path.ts).

// The warm runtime's client object per cluster (one, or one per cluster of KHRUN_CLUSTERS a report named)
// and its shared lookup: their clocks outlive an invocation.
type ClusterRuntime = { client: KubeClient; lookup: CallerLookup };
let runtime:
  | { logger: Logger; one?: ClusterRuntime; fleet?: Map<string, Promise<ClusterRuntime>> }
  | undefined;
// The key's parameter, cached while warm (PARAMETER_MAX_AGE_SECONDS), so a rotation is picked up.
const readParameter = ssmParameterReader();

function clusterRuntime(client: KubeClient, scope: NamespaceScope): ClusterRuntime {
  return {
    client,
    // Kept while the function is warm: unsigned reports of one run (or a flood naming one) share a LIST.
    lookup: sharedLookup(kubeCallerLookup(client, scope, { ipLookupWaitMs: 0 }), {
      nowMs: () => performance.now(),
    }),
  };
}

export async function handler(
  event: APIGatewayProxyEventV2,
  context: Context,
): Promise<APIGatewayProxyStructuredResultV2> {
  // A ConfigError, or a ReportKeyParameterError (the key's parameter cannot be read), fails the invocation
  // with its message: a report is never taken unsigned for want of the key.
  const keyParameter = await reportKeyFromParameter(process.env, readParameter);
  const options = lambdaReportOptions({ env: process.env, keyParameter });
  runtime ??= { logger: createLogger({ service: 'khrun-report', level: options.logLevel }) };
  const { logger } = runtime;
  let cluster: ClusterRuntime;
  if (options.fleet) {
    // The report's URL names its cluster (lib/report/cluster-path.ts); any other is refused at once.
    const route = routeReportToCluster(
      event,
      options.fleet.members.map((m) => m.name),
    );
    if (!route.ok) return route.response;
    event = route.event;
    const member = options.fleet.members.find((m) => m.name === route.cluster)!;
    runtime.fleet ??= new Map();
    let made = runtime.fleet.get(member.name);
    if (!made) {
      made = fleetKubeConfig(member.access, defaultProvider()).then((kc) =>
        clusterRuntime(kubeClient(kc, { log: logPort(logger) }), options.scope),
      );
      runtime.fleet.set(member.name, made);
      made.catch(() => runtime?.fleet?.delete(member.name));
    }
    cluster = await made;
    logger.appendKeys({ cluster: member.name });
  } else {
    cluster = runtime.one ??= clusterRuntime(
      kubeClient(lambdaKubeConfig(options.cluster), { log: logPort(logger) }),
      options.scope,
    );
  }
  logger.addContext(context);
  try {
    return await reportFromUrlEvent(event, {
      client: cluster.client,
      scope: options.scope,
      log: logPort(logger),
      server: `lambda-${context.functionName}`,
      reportKey: options.reportKey,
      unsigned: options.unsigned,
      lookup: cluster.lookup,
      remainingMs: () => context.getRemainingTimeInMillis(),
    });
  } finally {
    logger.resetKeys();
  }
}
