import { CheckNotFoundError } from '../run/errors.ts';

/** The HealthCheck named on the command line does not exist: a usage error (exit 2), as for a khcheck. */
export class HealthCheckNotFoundError extends CheckNotFoundError {
  override readonly name: string = 'HealthCheckNotFoundError';
  constructor(namespace: string, name: string, options?: ErrorOptions) {
    super(
      namespace,
      name,
      'HealthCheck',
      `HealthCheck ${namespace}/${name} not found; list them with "kubectl get healthchecks -A" and pass --healthcheck NAME --namespace NS`,
      options,
    );
  }
}
