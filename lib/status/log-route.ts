import type { KindName } from '../core/run-target.ts';
import type { HealthCheck } from '../healthcheck/resources.ts';
import { stateViewOf } from '../healthcheck/state-view.ts';
import { apiErrorMessage } from '../kube/errors.ts';
import { lastRunPodNames } from '../logs/checker-pods.ts';
import { LogUnavailableError, LogUnavailableReason } from '../logs/pod-log.ts';
import type { KhState } from '../state/resources.ts';
import type { ReadTailFn } from './log-tail-cache.ts';

/**
 * `GET /api/logs`: the log tail of the checker pod of a check's last recorded run, as Kuberhealthy v3's
 * route of that path (`namespace`, `healthcheck`, `pod`, `format=text`), also for khchecks (`khcheck=`) and
 * khjobs (`khjob=`). Bounded (lib/logs/log-tail.ts: 20 lines, 4 KiB; v3 sends the whole log); `pod` is
 * optional and, when given, must be the last run's pod (v3 answers 403 to a pod not of the check): the
 * server reads no log of any other pod, and lists no pods to find it (lastRunPodNames: at most two reads).
 */
export const LOG_ROUTE_PATH = '/api/logs';

const KIND_PARAMS: ReadonlyArray<[string, KindName]> = [
  ['khcheck', 'khcheck'],
  ['khjob', 'khjob'],
  ['healthcheck', 'healthcheck'],
];

export interface LogRouteSources {
  states: readonly KhState[];
  healthChecks: readonly HealthCheck[];
  /** Reads a tail (the server's pods/log, cached); absent: this status endpoint reads no logs. */
  readTail?: ReadTailFn;
}

export interface LogAnswer {
  status: number;
  /** The JSON document, or with format=text the tail's lines. */
  json?: Record<string, unknown>;
  text?: string;
}

const fail = (status: number, error: string): LogAnswer => ({ status, json: { error } });

/** The answer to one request: its query parsed and checked, the state found, the tail read. */
export async function answerLogRequest(query: URLSearchParams, sources: LogRouteSources): Promise<LogAnswer> {
  const namespace = query.get('namespace')?.trim() ?? '';
  const named = KIND_PARAMS.flatMap(([param, kind]) => {
    const value = query.get(param)?.trim();
    return value ? [{ kind, name: value }] : [];
  });
  const format = query.get('format') ?? 'json';
  if (format !== 'json' && format !== 'text') return fail(406, "format must be 'json' or 'text'");
  if (!namespace || named.length !== 1)
    return fail(
      400,
      'give namespace and one of khcheck, khjob or healthcheck (and optionally pod, container)',
    );
  const { kind, name } = named[0]!;
  const state =
    kind === 'healthcheck'
      ? viewOf(
          sources.healthChecks.find((h) => h.metadata.namespace === namespace && h.metadata.name === name),
        )
      : (sources.states.find((s) => s.metadata.namespace === namespace && s.metadata.name === name) ?? null);
  if (!state) return fail(404, `no ${kind} ${namespace}/${name} is known to this server`);
  const candidates = lastRunPodNames(kind, name, state);
  if (candidates.length === 0) return fail(404, `no run of ${kind} ${namespace}/${name} was recorded yet`);
  const asked = query.get('pod')?.trim();
  const notOfRun = () =>
    fail(403, `pod ${asked} is not the checker pod of the last run of ${kind} ${namespace}/${name}`);
  if (asked && !candidates.includes(asked)) return notOfRun();
  if (!sources.readTail)
    return fail(501, 'this status endpoint does not read checker logs (khrun serve does)');
  const readTail = sources.readTail;
  const container = query.get('container')?.trim() || undefined;
  let pod = candidates.at(-1)!;
  try {
    const tail = await firstThatExists(candidates, (p) => {
      pod = p;
      return readTail({ namespace, pod: p, ...(container ? { container } : {}) });
    });
    if (asked && asked !== pod) return notOfRun();
    if (format === 'text') return { status: 200, text: tail.lines.map((l) => `${l}\n`).join('') };
    return {
      status: 200,
      json: {
        namespace,
        [kind]: name,
        pod,
        ...(container ? { container } : {}),
        lines: tail.lines,
        truncated: tail.truncated,
        endMissing: tail.endMissing,
      },
    };
  } catch (error) {
    if (!(error instanceof LogUnavailableError))
      return fail(502, `reading the log of pod ${namespace}/${pod} failed: ${apiErrorMessage(error)}`);
    switch (error.reason) {
      case LogUnavailableReason.Gone:
        return fail(
          404,
          `${error.message}: khrun keeps a check's last finished pods (KHRUN_KEEP_FINISHED_PODS)`,
        );
      case LogUnavailableReason.NotStarted:
        return fail(409, error.message);
      case LogUnavailableReason.Forbidden:
        return fail(
          503,
          `this server may not read checker logs: ${error.message}; its ClusterRole needs pods/log get`,
        );
    }
  }
}

/** Reads the candidates in order; the first one not gone is the run's pod (a gone last one throws). */
async function firstThatExists<T>(
  candidates: readonly string[],
  read: (pod: string) => Promise<T>,
): Promise<T> {
  for (const [i, pod] of candidates.entries()) {
    try {
      return await read(pod);
    } catch (error) {
      const gone = error instanceof LogUnavailableError && error.reason === LogUnavailableReason.Gone;
      if (!gone || i === candidates.length - 1) throw error;
    }
  }
  throw new Error('no candidate pod');
}

const viewOf = (hc: HealthCheck | undefined) => (hc ? stateViewOf(hc) : null);
