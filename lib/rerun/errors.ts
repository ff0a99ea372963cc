import { ApiErrorKind, apiErrorMessage, classifyApiError } from '../kube/errors.ts';

/**
 * Why `khrun run` could not start or follow a runner Job in the cluster. A subclass says what to do;
 * `exitCode` is the CLI's: 2 for what does not change until someone acts (install khrun, grant rights).
 */
export class RerunError extends Error {
  override readonly name: string = 'RerunError';
  readonly exitCode: number = 1;
}

/** khrun's runner PodTemplate is not where the run looked for it: khrun is not installed there. */
export class RunnerTemplateMissingError extends RerunError {
  override readonly name: string = 'RunnerTemplateMissingError';
  override readonly exitCode = 2;
  constructor(
    readonly namespace: string,
    readonly template: string,
    options?: ErrorOptions,
  ) {
    super(
      `the runner PodTemplate ${namespace}/${template} does not exist, so no runner Job can be made from it: ` +
        `khrun is not installed in namespace ${namespace}. Install it there (kubectl apply -k infra/deploy, or ` +
        `helm install khrun infra/helm/khrun -n ${namespace}), or name where it is installed with ` +
        '--runner-namespace NS (else KHRUN_NAMESPACE) and --pod-template NAME; or run here with --local and a ' +
        '--report-host checker pods can reach',
      options,
    );
  }
}

/** A request the caller's identity may not make: the verb, the resource and where, and what grants it. */
export class RerunForbiddenError extends RerunError {
  override readonly name: string = 'RerunForbiddenError';
  override readonly exitCode = 2;
  constructor(
    readonly verb: string,
    readonly resource: string,
    readonly namespace: string,
    detail: string,
    options?: ErrorOptions,
  ) {
    super(
      `forbidden (403): cannot ${verb} ${resource} in namespace ${namespace} (${detail}); a rerun in the ` +
        "cluster needs the khrun-rerun Role in khrun's namespace and the khrun-rerun ClusterRole where the " +
        'check is, bound to you (docs/rerun.md says how)',
      options,
    );
  }
}

/**
 * The error an API request of a rerun failed with, as a RerunForbiddenError when it was a 403 (naming
 * verb, resource and namespace), else unchanged.
 */
export function asRerunError(
  error: unknown,
  request: { verb: string; resource: string; namespace: string },
): unknown {
  if (classifyApiError(error) !== ApiErrorKind.Forbidden) return error;
  return new RerunForbiddenError(request.verb, request.resource, request.namespace, apiErrorMessage(error), {
    cause: error,
  });
}
