import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { HC_GROUP, HC_PLURAL, HC_VERSION, type HealthCheck } from '../../lib/healthcheck/resources.ts';
import { runListWatch } from '../../lib/kube/list-watch.ts';
import { KH_GROUP, KH_VERSION, KHSTATE_PLURAL, type KhState } from '../../lib/state/resources.ts';

/** Where a run's start and outcome are written: a khstate (v2, khrun run --check) or a HealthCheck's status. */
export type RunRecord = 'khstate' | 'healthcheck';

/** One run of a check as a watcher saw it: its start (a new run UUID) and its outcome (a new result). */
export interface SeenRun {
  uuid: string;
  startSeenMs: number;
  outcomeSeenMs?: number;
  ok?: boolean;
  /** A HealthCheck's status.lastRunUnix as its outcome was written (the run's start, whole seconds). */
  lastRunUnix?: number;
}

/** What one version of the object says about its runs. */
export interface Marks {
  uuid: string;
  result: string;
  ok: boolean;
  lastRunUnix?: number;
}

/** What decides a run's start and its outcome in one version of the object (pure). */
export function marksOf(record: RunRecord, o: KubernetesObject): Marks {
  if (record === 'khstate') {
    const spec = (o as KhState).spec;
    // Every result Kuberhealthy v2 and khrun store sets LastRun (v2: setCheckStateResource).
    return { uuid: spec?.uuid ?? '', result: spec?.LastRun ?? '', ok: spec?.OK === true };
  }
  const status = (o as HealthCheck).status;
  const count = (status?.successCount ?? 0) + (status?.failureCount ?? 0);
  return {
    uuid: status?.currentUUID ?? '',
    result: String(count),
    ok: status?.ok === true,
    ...(status?.lastRunUnix ? { lastRunUnix: status.lastRunUnix } : {}),
  };
}

/**
 * The runs of one check after it changed to `marks` at seenMs (state: the UUIDs seen, updated): a run UUID not seen before starts a run;
 * the first result after a start (LastRun, or the count of results, differing from the start's) is its
 * outcome. A run that never got one (a restart in between) stays without.
 */
export function nextRuns(
  runs: readonly SeenRun[],
  state: { uuids: Set<string>; resultAtStart?: string },
  marks: Marks,
  seenMs: number,
): SeenRun[] {
  if (marks.uuid && !state.uuids.has(marks.uuid)) {
    state.uuids.add(marks.uuid);
    state.resultAtStart = marks.result;
    return [...runs, { uuid: marks.uuid, startSeenMs: seenMs }];
  }
  const last = runs[runs.length - 1];
  if (!last || last.outcomeSeenMs !== undefined || marks.result === state.resultAtStart) return [...runs];
  const lastRunUnix = marks.lastRunUnix === undefined ? {} : { lastRunUnix: marks.lastRunUnix };
  return [...runs.slice(0, -1), { ...last, outcomeSeenMs: seenMs, ok: marks.ok, ...lastRunUnix }];
}

export interface RunWatch {
  /** The runs seen so far in a namespace (one check per namespace). */
  runs(namespace: string): SeenRun[];
  /** Resolves once decide() holds, checked on every change; rejects after timeoutMs; settles quietly when aborted. */
  until(decide: () => boolean, timeoutMs: number, description: string, signal?: AbortSignal): Promise<void>;
  /** Resolves once no watched object has changed for quietMs; rejects after timeoutMs. */
  quiet(quietMs: number, timeoutMs: number): Promise<void>;
  stop(): void;
}

/** Watches the khstates or HealthChecks of the whole cluster and records the runs of the given namespaces. */
export function watchRuns(kc: KubeConfig, record: RunRecord, namespaces: readonly string[]): RunWatch {
  const stop = new AbortController();
  const byNs = new Map(namespaces.map((ns) => [ns, { runs: [] as SeenRun[], uuids: new Set<string>() }]));
  const lastVersion = new Map<string, string>();
  const waiters = new Set<() => void>();
  let lastChangeMs = Date.now();
  const path =
    record === 'khstate'
      ? `/apis/${KH_GROUP}/${KH_VERSION}/${KHSTATE_PLURAL}`
      : `/apis/${HC_GROUP}/${HC_VERSION}/${HC_PLURAL}`;
  void runListWatch<KubernetesObject>({
    kc,
    path,
    signal: stop.signal,
    onChange: (items) => {
      const seenMs = Date.now();
      for (const o of items.values()) {
        const ns = o.metadata?.namespace ?? '';
        const entry = byNs.get(ns);
        const version = o.metadata?.resourceVersion ?? '';
        if (!entry || lastVersion.get(ns) === version) continue;
        lastVersion.set(ns, version);
        lastChangeMs = seenMs;
        entry.runs = nextRuns(entry.runs, entry, marksOf(record, o), seenMs);
      }
      for (const wake of waiters) wake();
    },
  });
  return {
    runs: (ns) => [...(byNs.get(ns)?.runs ?? [])],
    until(decide, timeoutMs, description, signal) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!decide()) return;
          cleanup();
          resolve();
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${description}`));
        }, timeoutMs);
        const aborted = () => {
          cleanup();
          resolve();
        };
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
          signal?.removeEventListener('abort', aborted);
        };
        signal?.addEventListener('abort', aborted);
        waiters.add(check);
        check();
      });
    },
    async quiet(quietMs, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      // A silence is the absence of events: checked on a timer, each wait as long as the silence still needed.
      for (;;) {
        const left = lastChangeMs + quietMs - Date.now();
        if (left <= 0) return;
        if (Date.now() + left > deadline)
          throw new Error(
            `the watched checks did not stay unchanged for ${quietMs} ms within ${timeoutMs} ms`,
          );
        await new Promise((r) => setTimeout(r, left));
      }
    },
    stop: () => stop.abort(),
  };
}

/** Resolves once decide() holds, checked on a change of any of the watches; rejects after timeoutMs. */
export async function untilAny(
  watches: readonly RunWatch[],
  decide: () => boolean,
  timeoutMs: number,
  description: string,
): Promise<void> {
  const settled = new AbortController();
  try {
    await Promise.race(watches.map((w) => w.until(decide, timeoutMs, description, settled.signal)));
  } finally {
    settled.abort();
  }
}
