import { MISDIRECTED } from '../report/http-server.ts';

/**
 * Whether a report endpoint may still take a checker pod's report: 'dead' only on the two answers that prove
 * it never can: nothing listens at its address (connection refused), or what listens there says it would
 * refuse that URL's report (421, lib/report/http-server.ts: the address is another runner's now, with
 * another key); any other HTTP answer is 'alive'; anything else (a timeout, an unreachable network, a
 * malformed URL) is 'unknown', which callers must treat as "may still be alive".
 */
export type EndpointState = 'alive' | 'dead' | 'unknown';

/** The port an adopting runner asks before it replaces a checker pod (lib/run/checker-pod.ts). */
export interface EndpointProbe {
  probe(url: string, signal: AbortSignal): Promise<EndpointState>;
  /**
   * Runners choose their report port per process (KHRUN_REPORT_PORT=0, as on a laptop or in tests), so
   * another runner's endpoint may listen at any port; otherwise it listens at ours (see isRunnerEndpoint).
   */
  readonly anyPort?: boolean;
}

/** How long a probe waits for an answer before it says 'unknown'. */
export const PROBE_TIMEOUT_MS = 2_000;

/**
 * Probes with one GET to the URL as the pod holds it. A report endpoint answers a GET without any API
 * request (it refuses it), so the probe costs the endpoint nothing. The body is never read.
 */
export const httpEndpointProbe: EndpointProbe = {
  async probe(url, signal) {
    try {
      const response = await fetch(url, {
        method: 'GET',
        redirect: 'manual',
        signal: AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]),
      });
      await response.body?.cancel();
      return response.status === MISDIRECTED ? 'dead' : 'alive';
    } catch (error) {
      return refused(error) ? 'dead' : 'unknown';
    }
  },
};

/** fetch's TypeError carries the socket error as cause; several addresses tried give an AggregateError. */
function refused(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string; errors?: Array<{ code?: string }> } })?.cause;
  if (cause?.code === 'ECONNREFUSED') return true;
  return Boolean(cause?.errors?.length) && (cause?.errors ?? []).every((e) => e.code === 'ECONNREFUSED');
}

/**
 * The probe for a runner that hosts its reports at `port` or not at all: a runner on a free port
 * (KHRUN_REPORT_PORT=0) cannot tell another runner's endpoint by its port, so it accepts any.
 */
export function endpointProbeFor(report: { kind: string; port?: number }): EndpointProbe {
  return { ...httpEndpointProbe, anyPort: report.kind === 'hosted' && report.port === 0 };
}
