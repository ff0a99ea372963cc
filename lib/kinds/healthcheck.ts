import { checkUrlOf, signedCheckUrl } from '../healthcheck/check-url.ts';
import { healthCheckEventSink } from '../healthcheck/events.ts';
import { healthCheckApi } from '../healthcheck/healthcheck-api.ts';
import { healthCheckPort } from '../healthcheck/healthcheck-port.ts';
import { HealthCheckNotFoundError } from '../healthcheck/not-found.ts';
import { healthCheckReportRoute } from '../healthcheck/report-route.ts';
import { CheckNotFoundError } from '../run/errors.ts';
import type { Kind } from './kind.ts';

/**
 * Kuberhealthy v3's HealthCheck: run through the HealthCheck port (its state in the HealthCheck's status),
 * its checker pods reporting to v3's `/check` (the run signed into the query when a key is set; bare, a
 * report is looked up by kh-run-uuid as v3 does), its Events on the HealthCheck.
 */
export const healthCheckKind: Kind = {
  name: 'healthcheck',
  noun: 'HealthCheck',
  ports(client) {
    const api = healthCheckApi(client);
    const kube = healthCheckPort(api);
    return {
      kube,
      events: healthCheckEventSink(client),
      route: (ctx) => healthCheckReportRoute({ api, port: kube, ...ctx }),
    };
  },
  reportingUrl(base, key) {
    const url = checkUrlOf(base);
    return key ? (run) => signedCheckUrl(url, key, run) : url;
  },
  async run(kit, run) {
    try {
      return await kit.iterate(kit.deps(run), run);
    } catch (error) {
      if (error instanceof CheckNotFoundError) {
        const { namespace, name } = run.target;
        throw new HealthCheckNotFoundError(namespace, name, { cause: error });
      }
      throw error;
    }
  },
};
