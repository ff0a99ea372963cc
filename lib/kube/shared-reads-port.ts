import { isRunPod } from '../check/run-label.ts';
import type { KubePort, ListedPods } from './port.ts';
import type { SharedReads } from './shared-reads.ts';

/**
 * The KubePort of a batch's runs: a run's first khcheck and khstate reads, its list of the check's pods and its pod
 * watch come from the batch's shared reads (shared-reads.ts) where they serve its namespace; every other
 * call, and all of them where they do not, is inner's. A run that also watches its khstate (an adopted
 * run, or one without the report inbox) keeps inner's watch whole.
 */
export function withSharedReads(inner: KubePort, shared: SharedReads): KubePort {
  const listCheckPodsAt = async (namespace: string, checkName: string): Promise<ListedPods> =>
    (await shared.pods(namespace)?.checkPods(checkName)) ?? inner.listCheckPodsAt(namespace, checkName);
  return {
    ...inner,
    async readCheck(namespace, name) {
      const taken = await shared.takeCheck(namespace, name);
      return taken ? taken.check : inner.readCheck(namespace, name);
    },
    async readState(namespace, name) {
      const taken = await shared.takeState(namespace, name);
      return taken ? taken.state : inner.readState(namespace, name);
    },
    listCheckPodsAt,
    listCheckPods: async (namespace, checkName) => (await listCheckPodsAt(namespace, checkName)).pods,
    async watchRun(opts) {
      const feed = shared.pods(opts.namespace);
      if (!feed || (opts.watchState ?? true)) return inner.watchRun(opts);
      const watched = await feed.watchRunPods({
        runUuid: opts.runUuid,
        signal: opts.signal,
        seed: (opts.podsFrom?.pods ?? []).filter((p) => isRunPod(p, opts.runUuid)),
        onChange: (pods) => opts.onChange({ pods, state: null }),
        onInterruption: opts.onInterruption,
      });
      if (!watched) return inner.watchRun(opts);
    },
  };
}
