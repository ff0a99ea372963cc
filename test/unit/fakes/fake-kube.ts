import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { CHECK_NAME_LABEL } from '../../../lib/check/pod-builder.ts';
import { isRunPod } from '../../../lib/check/run-label.ts';
import { WriteConflict } from '../../../lib/kube/errors.ts';
import type { PodRemoval } from '../../../lib/kube/pod-removal.ts';
import type { KubePort, ListedPods } from '../../../lib/kube/port.ts';
import type { KhCheck, KhState } from '../../../lib/state/resources.ts';

/** An error shaped like a client-node ApiException, for paths that classify by status code. */
export class FakeApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

type WatchArgs = Parameters<KubePort['watchRun']>[0];

const key = (namespace: string, name: string) => `${namespace}/${name}`;
const copy = <T>(value: T): T => structuredClone(value);
/** One round trip: every call yields at least once, so concurrent callers really interleave. */
const roundTrip = () => new Promise<void>((resolve) => queueMicrotask(resolve));

/**
 * An in-memory API server for the driver's tests: khstates with an incrementing resourceVersion and real
 * preconditions (a stale resourceVersion or an existing name is a WriteConflict), pods in a map, and
 * watches that deliver the current view at once and after every change until their signal aborts.
 * Everything handed out or taken in is deep-copied, so no test passes by aliasing.
 */
export class FakeKube implements KubePort {
  readonly checks = new Map<string, KhCheck>();
  readonly states = new Map<string, KhState>();
  readonly pods = new Map<string, V1Pod>();
  /** Every khstate version stored, in order (creates, replaces and test edits). */
  readonly stateHistory: KhState[] = [];
  readonly createdPods: V1Pod[] = [];
  readonly removedPods: string[] = [];
  readonly conflicts: { op: 'createState' | 'replaceState' | 'createPod'; name: string }[] = [];
  readonly calls = { readState: 0, createState: 0, replaceState: 0, createPod: 0, removePod: 0, watchRun: 0 };
  /** Every request as the API server's audit log would name it (`verb resource`), in order. */
  readonly requests: string[] = [];
  /** Runs before a replace is checked against the stored version: lets a test write in between. */
  beforeReplace: ((incoming: KhState) => void) | undefined;
  /**
   * Eviction as a real cluster does it: the pod stays listed with a deletionTimestamp until the kubelet
   * confirms (here: until the test calls deletePod). Off by default: removal is immediate.
   */
  gracefulRemoval = false;
  /** Lets a test make pod creation fail (e.g. a 422 from admission). */
  createPodError: ((pod: V1Pod) => Error | undefined) | undefined;

  private resourceVersion = 100;
  private readonly watchers = new Set<() => void>();
  private readonly waiters = new Set<{ test: () => boolean; resolve: () => void }>();
  private readGate: { size: number; pending: (() => void)[] } | undefined;

  // --- KubePort --------------------------------------------------------------------------------------

  async readCheck(namespace: string, name: string): Promise<KhCheck | null> {
    this.requests.push('get khchecks');
    await roundTrip();
    const check = this.checks.get(key(namespace, name));
    return check ? copy(check) : null;
  }

  async readState(namespace: string, name: string): Promise<KhState | null> {
    this.calls.readState++;
    this.requests.push('get khstates');
    await roundTrip();
    await this.passReadGate();
    const state = this.states.get(key(namespace, name));
    return state ? copy(state) : null;
  }

  async createState(state: KhState): Promise<KhState> {
    this.calls.createState++;
    this.requests.push('create khstates');
    await roundTrip();
    const k = key(state.metadata.namespace, state.metadata.name);
    if (this.states.has(k)) {
      this.conflicts.push({ op: 'createState', name: state.metadata.name });
      throw new WriteConflict('AlreadyExists');
    }
    return this.store(state);
  }

  async replaceState(state: KhState): Promise<KhState> {
    this.calls.replaceState++;
    this.requests.push('update khstates');
    await roundTrip();
    this.beforeReplace?.(copy(state));
    const stored = this.states.get(key(state.metadata.namespace, state.metadata.name));
    if (!stored) throw new FakeApiError(404, `khstates "${state.metadata.name}" not found`);
    if (!state.metadata.resourceVersion) {
      throw new FakeApiError(
        422,
        'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
      );
    }
    if (state.metadata.resourceVersion !== stored.metadata.resourceVersion) {
      this.conflicts.push({ op: 'replaceState', name: state.metadata.name });
      throw new WriteConflict('Conflict');
    }
    return this.store(state);
  }

  async deleteState(namespace: string, name: string, resourceVersion: string): Promise<void> {
    this.requests.push('delete khstates');
    await roundTrip();
    const stored = this.states.get(key(namespace, name));
    if (!stored) throw new FakeApiError(404, `khstates "${name}" not found`);
    if (stored.metadata.resourceVersion !== resourceVersion) throw new WriteConflict('Conflict');
    this.states.delete(key(namespace, name));
    this.changed();
  }

  async listCheckPods(namespace: string, checkName: string): Promise<V1Pod[]> {
    return (await this.listCheckPodsAt(namespace, checkName)).pods;
  }

  async listCheckPodsAt(namespace: string, checkName: string): Promise<ListedPods> {
    this.requests.push('list pods');
    await roundTrip();
    const pods = [...this.pods.values()]
      .filter(
        (p) => p.metadata?.namespace === namespace && p.metadata?.labels?.[CHECK_NAME_LABEL] === checkName,
      )
      .map(copy);
    return { pods, resourceVersion: String(this.resourceVersion) };
  }

  async createPod(pod: V1Pod): Promise<V1Pod> {
    this.calls.createPod++;
    this.requests.push('create pods');
    await roundTrip();
    const injected = this.createPodError?.(pod);
    if (injected) throw injected;
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    if (this.pods.has(key(namespace, name))) {
      this.conflicts.push({ op: 'createPod', name });
      throw new WriteConflict('AlreadyExists');
    }
    const created: V1Pod = copy(pod);
    created.metadata = {
      ...created.metadata,
      uid: `uid-${name}`,
      creationTimestamp: new Date(Date.now()),
      resourceVersion: String(++this.resourceVersion),
    };
    created.status = { phase: 'Pending' };
    this.pods.set(key(namespace, name), created);
    this.createdPods.push(copy(created));
    this.changed();
    return copy(created);
  }

  async removePod(namespace: string, name: string, uid?: string): Promise<PodRemoval> {
    this.calls.removePod++;
    this.requests.push('delete pods');
    await roundTrip();
    const pod = this.pods.get(key(namespace, name));
    // The API server's uid precondition: another pod of the same name is left alone.
    if (!pod || (uid !== undefined && pod.metadata?.uid !== uid)) return { kind: 'gone' };
    this.removedPods.push(name);
    if (this.gracefulRemoval) {
      pod.metadata = {
        ...pod.metadata,
        deletionTimestamp: pod.metadata?.deletionTimestamp ?? new Date(Date.now()),
        resourceVersion: String(++this.resourceVersion),
      };
    } else {
      this.pods.delete(key(namespace, name));
    }
    this.changed();
    return { kind: 'deleted' };
  }

  async watchRun(args: WatchArgs): Promise<void> {
    const { namespace, checkName, runUuid, signal, onChange } = args;
    const watchState = args.watchState ?? true;
    this.calls.watchRun++;
    // As the real port: pods listed unless a list's resourceVersion is given, the khstate only when asked.
    if (!args.podsFrom?.resourceVersion) this.requests.push('list pods');
    this.requests.push('watch pods');
    if (watchState) this.requests.push('list khstates', 'watch khstates');
    await roundTrip(); // the initial list
    if (signal.aborted) return;
    const deliver = () => {
      if (signal.aborted) return;
      const pods = [...this.pods.values()]
        .filter((p) => p.metadata?.namespace === namespace && isRunPod(p, runUuid))
        .map(copy);
      const state = watchState ? this.states.get(key(namespace, checkName)) : undefined;
      onChange({ pods, state: state ? copy(state) : null });
    };
    this.watchers.add(deliver);
    try {
      deliver();
      this.checkWaiters();
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      this.watchers.delete(deliver);
      this.checkWaiters();
    }
  }

  // --- test controls ---------------------------------------------------------------------------------

  /** Stores (or overwrites) a khstate as someone else's write would, with a new resourceVersion. */
  putState(state: KhState): KhState {
    return this.store(state);
  }

  putCheck(check: KhCheck): void {
    this.checks.set(key(check.metadata.namespace, check.metadata.name), copy(check));
  }

  deleteCheck(namespace: string, name: string): void {
    this.checks.delete(key(namespace, name));
  }

  putPod(pod: V1Pod): void {
    const stored = copy(pod);
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.resourceVersion) };
    this.pods.set(key(stored.metadata.namespace ?? '', stored.metadata.name ?? ''), stored);
    this.changed();
  }

  /** What the kubelet does: a new pod status. */
  setPodStatus(namespace: string, name: string, status: V1PodStatus): void {
    const pod = this.pods.get(key(namespace, name));
    if (!pod) throw new Error(`no pod ${namespace}/${name}`);
    pod.status = copy(status);
    pod.metadata = { ...pod.metadata, resourceVersion: String(++this.resourceVersion) };
    this.changed();
  }

  /** What the scheduler does: binds the pod to a node. */
  bindPod(namespace: string, name: string, node: string): void {
    const pod = this.pods.get(key(namespace, name));
    if (!pod?.spec) throw new Error(`no pod ${namespace}/${name}`);
    pod.spec.nodeName = node;
    pod.metadata = { ...pod.metadata, resourceVersion: String(++this.resourceVersion) };
    this.changed();
  }

  /** A pod deleted by someone else (a node drain, a human, the pod GC). */
  deletePod(namespace: string, name: string): void {
    if (this.pods.delete(key(namespace, name))) this.changed();
  }

  state(namespace: string, name: string): KhState | undefined {
    const state = this.states.get(key(namespace, name));
    return state ? copy(state) : undefined;
  }

  podsOfRun(runUuid: string): V1Pod[] {
    return [...this.pods.values()].filter((p) => isRunPod(p, runUuid)).map(copy);
  }

  /** Resolves once test() holds; checked now and after every change the fake sees. */
  until(test: () => boolean): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.add({ test, resolve }));
  }

  /** Holds the next `size` readState calls until all of them arrived, so they all see the same version. */
  gateReads(size: number): void {
    this.readGate = { size, pending: [] };
  }

  get watching(): number {
    return this.watchers.size;
  }

  private async passReadGate(): Promise<void> {
    const gate = this.readGate;
    if (!gate) return;
    await new Promise<void>((resolve) => {
      gate.pending.push(resolve);
      if (gate.pending.length === gate.size) {
        this.readGate = undefined;
        for (const release of gate.pending) release();
      }
    });
  }

  private store(state: KhState): KhState {
    const stored = copy(state);
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.resourceVersion) };
    this.states.set(key(stored.metadata.namespace, stored.metadata.name), stored);
    this.stateHistory.push(copy(stored));
    this.changed();
    return copy(stored);
  }

  private changed(): void {
    for (const deliver of [...this.watchers]) deliver();
    this.checkWaiters();
  }

  private checkWaiters(): void {
    for (const waiter of [...this.waiters]) {
      if (waiter.test()) {
        this.waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }
}
