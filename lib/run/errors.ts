/** The khcheck named on the command line does not exist: a usage error (exit 2), not a check failure. */
export class CheckNotFoundError extends Error {
  override readonly name = 'CheckNotFoundError';
  constructor(
    readonly namespace: string,
    readonly checkName: string,
  ) {
    super(
      `khcheck ${namespace}/${checkName} not found; list the checks with "kubectl get khchecks -A" and pass --check NAME --namespace NS`,
    );
  }
}
