import { type MissingResource, NotFoundError } from '../core/not-found.ts';

/** The khcheck named on the command line does not exist: a usage error (exit 2), not a check failure. */
export class CheckNotFoundError extends NotFoundError {
  override readonly name: string = 'CheckNotFoundError';
  constructor(
    readonly namespace: string,
    readonly checkName: string,
    resource: MissingResource = 'khcheck',
    message = `khcheck ${namespace}/${checkName} not found; list the checks with "kubectl get khchecks -A" and pass --check NAME --namespace NS`,
    options?: ErrorOptions,
  ) {
    super({ resource, namespace, name: checkName }, message, options);
  }
}
