import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import type { RunCheckEvent } from '../config/run-check-event.ts';
import type { Dispatcher } from '../schedule/dispatcher.ts';
import type { CheckRef } from '../schedule/run-job.ts';

export interface LambdaInvokeOptions {
  functionName: string;
  region: string;
  credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** Defaults to https://lambda.<region>.amazonaws.com; tests point it at a local server. */
  endpoint?: string;
  fetch?: typeof fetch;
}

/** Where the tick's invocations run their checks: the function's own cluster, or one of its clusters. */
export interface DispatchCluster {
  /** The cluster the runCheck function is to run the check in (one of its KHRUN_CLUSTERS); none: its own. */
  cluster?: string;
}

/**
 * Sends one asynchronous invocation (InvocationType Event) through Lambda's Invoke API, signed with SigV4:
 * Lambda queues it and answers 202, and the function's EventInvokeConfig (no retries) decides what happens
 * on failure. Lambda's own API is used directly to keep the tick's bundle small (no SDK client).
 */
export async function invokeAsync(
  opts: LambdaInvokeOptions,
  event: RunCheckEvent | RunCheckBatchEvent,
): Promise<string> {
  const endpoint = new URL(opts.endpoint ?? `https://lambda.${opts.region}.amazonaws.com`);
  const path = `/2015-03-31/functions/${encodeURIComponent(opts.functionName)}/invocations`;
  const body = JSON.stringify(event);
  const signer = new SignatureV4({
    service: 'lambda',
    region: opts.region,
    credentials: opts.credentials,
    sha256: Sha256,
  });
  const signed = await signer.sign(
    new HttpRequest({
      protocol: endpoint.protocol,
      hostname: endpoint.hostname,
      port: endpoint.port ? Number(endpoint.port) : undefined,
      method: 'POST',
      path,
      headers: {
        host: endpoint.host,
        'content-type': 'application/json',
        'x-amz-invocation-type': 'Event',
      },
      body,
    }),
  );
  // fetch derives Host from the URL (the same value that was signed) and refuses to be given one.
  const { host: _host, ...headers } = signed.headers;
  const res = await (opts.fetch ?? fetch)(new URL(path, endpoint), { method: 'POST', headers, body });
  const text = await res.text();
  if (res.status !== 202) {
    throw new Error(`Lambda Invoke of ${opts.functionName} answered ${res.status}: ${text.slice(0, 300)}`);
  }
  return res.headers.get('x-amzn-requestid') ?? '';
}

/** The runCheck event for a check the tick dispatches: its kind said, so a khjob or HealthCheck is run as one. */
export function runCheckEventFor(check: CheckRef, cluster?: string): RunCheckEvent {
  return {
    kind: check.kind ?? 'khcheck',
    checkName: check.name,
    namespace: check.namespace,
    ...(cluster === undefined ? {} : { cluster }),
  };
}

/**
 * The runCheck event of a batch (the contract with the runner's batch form): the khchecks one invocation
 * drives, `{"checks":[{"kind":"khcheck","namespace":"ns","checkName":"a"}, ...]}`.
 */
export interface RunCheckBatchEvent {
  /** The cluster the checks live in (a function serving several, KHRUN_CLUSTERS); absent: its own. */
  cluster?: string;
  checks: Array<{ kind: 'khcheck'; namespace: string; checkName: string }>;
}

export function runCheckBatchEventFor(checks: readonly CheckRef[], cluster?: string): RunCheckBatchEvent {
  return {
    ...(cluster === undefined ? {} : { cluster }),
    checks: checks.map((c) => ({ kind: 'khcheck' as const, namespace: c.namespace, checkName: c.name })),
  };
}

/**
 * AWS mode of the tick: each due khjob and HealthCheck, and each batch of due khchecks (one khcheck when
 * batches are off), becomes one asynchronous invocation of the runCheck function; over several clusters,
 * each event names the cluster its checks live in.
 */
export function lambdaDispatcher(opts: LambdaInvokeOptions & DispatchCluster): Dispatcher {
  return {
    runsKhJobs: true,
    runsHealthChecks: true,
    refFor: (_check, nowMs) => `lambda:${opts.functionName}@${Math.floor(nowMs / 1000)}`,
    async dispatch(check) {
      await invokeAsync(opts, runCheckEventFor(check, opts.cluster));
    },
    batch: {
      // The invocation's request id is only known once sent: the ref names the tick's batch instead.
      refFor: (batchId, nowMs) => `lambda:${opts.functionName}@${Math.floor(nowMs / 1000)}#${batchId}`,
      async dispatch(checks) {
        await invokeAsync(opts, runCheckBatchEventFor(checks, opts.cluster));
      },
    },
  };
}
