import type { CoreV1Event, KubernetesObject, V1Job, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/kube-client.ts';
import { runListWatch } from '../kube/list-watch.ts';
import { kubeListWatchTransport, type ListResult, type Selectors } from '../kube/list-watch-transport.ts';
import { asRerunError, RerunForbiddenError } from './errors.ts';
import { type FollowEnd, type FollowStart, type FollowView, followEnd, milestones } from './follow-decide.ts';
import type { StateSource } from './state-source.ts';

export interface FollowDeps {
  client: KubeClient;
  /** One line per milestone (pod scheduled, running, outcome recorded, ...), for stderr. */
  progress: (line: string) => void;
  /** Ctrl-C: following stops; the Job keeps running. */
  signal: AbortSignal;
}

export interface FollowRequest {
  /** The runner Job as created. */
  job: V1Job;
  start: FollowStart;
  /** The run state's source and its list from before the Job was created (the watch resumes from it). */
  state: { source: StateSource; listed: ListResult<KubernetesObject> };
  /** Added to the Job's activeDeadlineSeconds: time for its pod to stop and the Job to say it failed. */
  graceMs?: number;
}

export type FollowResult =
  | { kind: 'ended'; end: FollowEnd; view: FollowView }
  | { kind: 'interrupted'; view: FollowView }
  | { kind: 'timed-out'; view: FollowView; afterMs: number };

/** Only the Warning Events about the Job or its pods (pods are named `<job>-<suffix>`). */
const aboutJob = (job: string) => (e: CoreV1Event) =>
  e.type === 'Warning' &&
  ((e.involvedObject?.kind === 'Job' && e.involvedObject.name === job) ||
    (e.involvedObject?.kind === 'Pod' && (e.involvedObject.name ?? '').startsWith(`${job}-`)));

/**
 * Follows a runner Job by watch until it finished (or was deleted), printing each milestone once: its pods
 * (by the Job's `job-name` label), the run's state, Warning Events about them. Bounded by the Job's
 * activeDeadlineSeconds plus graceMs, after which the Job controller has failed it; the caller's signal
 * stops following and leaves the Job running. A list the caller may not make is a RerunForbiddenError
 * (Events excepted: without them there are only fewer warnings).
 */
export async function followJob(deps: FollowDeps, req: FollowRequest): Promise<FollowResult> {
  const { client } = deps;
  const namespace = req.job.metadata?.namespace ?? '';
  const name = req.job.metadata?.name ?? '';
  const list = async <T extends KubernetesObject>(path: string, selectors: Selectors, resource: string) => {
    try {
      return await kubeListWatchTransport<T>(client).list(path, selectors, deps.signal);
    } catch (error) {
      throw asRerunError(error, { verb: 'list', resource, namespace });
    }
  };
  const jobs = {
    path: `/apis/batch/v1/namespaces/${namespace}/jobs`,
    selectors: { fieldSelector: `metadata.name=${name}` },
  };
  const pods = {
    path: `/api/v1/namespaces/${namespace}/pods`,
    selectors: { labelSelector: `job-name=${name}` },
  };
  const events = {
    path: `/api/v1/namespaces/${namespace}/events`,
    selectors: { fieldSelector: 'type=Warning' },
  };
  const [jobList, podList, eventList] = await Promise.all([
    list<V1Job>(jobs.path, jobs.selectors, 'jobs.batch'),
    list<V1Pod>(pods.path, pods.selectors, 'pods'),
    list<CoreV1Event>(events.path, events.selectors, 'events').catch((error: unknown) => {
      if (error instanceof RerunForbiddenError) return undefined;
      throw error;
    }),
  ]);
  const { source, listed } = req.state;
  const view: FollowView = {
    job: jobList.items[0] ?? null,
    pods: podList.items,
    state: listed.items[0] ? source.view(listed.items[0]) : null,
    events: (eventList?.items ?? []).filter(aboutJob(name)),
  };
  const afterMs = (req.job.spec?.activeDeadlineSeconds ?? 0) * 1000 + (req.graceMs ?? 60_000);
  const stop = new AbortController();
  const signal = AbortSignal.any([deps.signal, stop.signal, AbortSignal.timeout(afterMs)]);
  const printed = new Set<string>();
  let end: FollowEnd | undefined;
  const evaluate = () => {
    for (const m of milestones(view, req.start)) {
      if (printed.has(m.key)) continue;
      printed.add(m.key);
      deps.progress(m.line);
    }
    end ??= followEnd(view, req.start);
    if (end) stop.abort();
  };
  evaluate();
  const interrupted = new Set<string>();
  const watch = <T extends KubernetesObject>(
    where: { path: string; selectors: Selectors },
    from: ListResult<T>,
    apply: (items: ReadonlyMap<string, T>) => void,
  ) =>
    runListWatch<T>({
      kc: client,
      path: where.path,
      ...where.selectors,
      signal,
      from: { items: from.items, resourceVersion: from.metadata?.resourceVersion ?? '' },
      onChange: (items) => {
        apply(items);
        evaluate();
      },
      onInterruption: (reason) => {
        if (interrupted.has(where.path)) return;
        interrupted.add(where.path);
        deps.progress(`watch interrupted, trying again: ${reason}`);
      },
    });
  if (!end)
    await Promise.all([
      watch<V1Job>(jobs, jobList, (items) => {
        view.job = items.get(`${namespace}/${name}`) ?? null;
      }),
      watch<V1Pod>(pods, podList, (items) => {
        view.pods = [...items.values()];
      }),
      watch<KubernetesObject>(
        { path: source.path, selectors: { fieldSelector: source.fieldSelector } },
        listed,
        (items) => {
          const object = [...items.values()][0];
          view.state = object ? source.view(object) : null;
        },
      ),
      ...(eventList
        ? [
            watch<CoreV1Event>(events, eventList, (items) => {
              view.events = [...items.values()].filter(aboutJob(name));
            }),
          ]
        : []),
    ]);
  if (end) return { kind: 'ended', end, view };
  if (deps.signal.aborted) return { kind: 'interrupted', view };
  return { kind: 'timed-out', view, afterMs };
}
