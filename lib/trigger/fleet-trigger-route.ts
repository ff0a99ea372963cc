import type { Log } from '../core/log.ts';
import { isNotFound, loggableError } from '../kube/errors.ts';
import type { Route } from '../report/routes.ts';
import { type GateConfig, gateTrigger, TRIGGER_PATH } from './gate.ts';
import { sendTriggerAnswer } from './trigger-route.ts';

/** Hands a run to a runner in the named cluster (a runner Job); resolves to what names it (the Job). */
export type ClusterDispatch = (target: {
  cluster: string;
  namespace: string;
  checkName: string;
}) => Promise<string>;

/**
 * `POST /api/run?cluster=C&namespace=NS&check=NAME` on a server over several clusters: the same gate as one
 * cluster's trigger (the token, then the parameters; `cluster` required and one of gate.clusters), then the
 * run is handed to a runner in cluster C and the request answered 202 at once (`wait` is refused: the run is
 * not this process's). A khcheck the cluster does not have is 404 (dispatch threw a NotFound); a dispatch
 * that fails otherwise is 502, naming the cluster; nothing is retried here.
 */
export function fleetTriggerRoute(opts: { gate: GateConfig; dispatch: ClusterDispatch; log: Log }): Route {
  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://trigger.invalid');
    if (url.pathname !== TRIGGER_PATH) return false;
    const close =
      req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    const decision = gateTrigger(opts.gate, {
      method: req.method ?? '',
      query: url.search.slice(1),
      authorization: req.headers.authorization,
    });
    if (!decision.ok) {
      sendTriggerAnswer(
        res,
        {
          status: decision.status,
          body: { accepted: false, reason: decision.reason },
          headers: decision.headers,
        },
        { close },
      );
      return true;
    }
    const { namespace, checkName } = decision.target;
    const cluster = decision.target.cluster ?? '';
    const check = `${namespace}/${checkName}`;
    try {
      const job = await opts.dispatch({ cluster, namespace, checkName });
      opts.log.info('run triggered', { cluster, check, job });
      sendTriggerAnswer(
        res,
        { status: 202, body: { check, cluster, accepted: true, job }, headers: {} },
        { close },
      );
    } catch (error) {
      const missing = isNotFound(error);
      if (!missing)
        opts.log.error('trigger could not dispatch the run', { cluster, check, error: loggableError(error) });
      const reason = missing
        ? `no khcheck ${check} in cluster ${cluster}`
        : `the runner Job could not be created in cluster ${cluster}; retry`;
      sendTriggerAnswer(
        res,
        { status: missing ? 404 : 502, body: { check, cluster, accepted: false, reason }, headers: {} },
        { close },
      );
    }
    return true;
  };
}
