import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { HealthCheckApi } from '../../../lib/healthcheck/healthcheck-api.ts';
import type { HealthCheck } from '../../../lib/healthcheck/resources.ts';
import { WriteConflict } from '../../../lib/kube/errors.ts';
import type { PodRemoval } from '../../../lib/kube/pod-removal.ts';

const key = (namespace: string, name: string) => `${namespace}/${name}`;
const copy = <T>(value: T): T => structuredClone(value);
const roundTrip = () => new Promise<void>((resolve) => queueMicrotask(resolve));

/**
 * An in-memory API server for HealthChecks as a real one treats them: one resourceVersion per object,
 * bumped by every write and checked as precondition of every write; a PUT of the main resource keeps the
 * stored status, a PUT of the status subresource keeps everything but status (a CRD with
 * `subresources.status`). Pods in a map, selected by `key=value` labels. Everything is deep-copied.
 */
export class FakeHealthCheckApi implements HealthCheckApi {
  readonly checks = new Map<string, HealthCheck>();
  readonly pods = new Map<string, V1Pod>();
  readonly createdPods: V1Pod[] = [];
  /** Every write, in order: which kind, and the object as stored after it. */
  readonly writes: { kind: 'main' | 'status'; stored: HealthCheck; agent?: string }[] = [];
  /** Runs before a write is checked: a test can fail it (throw) or write in between. */
  beforeWrite: ((kind: 'main' | 'status', incoming: HealthCheck) => void) | undefined;
  private rv = 1000;
  private readonly listeners = new Set<() => void>();

  put(hc: HealthCheck): HealthCheck {
    const stored = copy(hc);
    stored.metadata = {
      ...stored.metadata,
      uid: stored.metadata.uid ?? `uid-${hc.metadata.name}`,
      resourceVersion: String(++this.rv),
    };
    this.checks.set(key(hc.metadata.namespace, hc.metadata.name), stored);
    this.changed();
    return copy(stored);
  }

  check(namespace: string, name: string): HealthCheck {
    const hc = this.checks.get(key(namespace, name));
    if (!hc) throw new Error(`no HealthCheck ${namespace}/${name}`);
    return copy(hc);
  }

  setPodStatus(namespace: string, name: string, status: V1PodStatus, nodeName = 'node-1'): void {
    const pod = this.pods.get(key(namespace, name));
    if (!pod) throw new Error(`no pod ${name}`);
    pod.status = status;
    pod.spec = { ...pod.spec, containers: pod.spec?.containers ?? [], nodeName };
    pod.metadata = { ...pod.metadata, resourceVersion: String(++this.rv) };
    this.changed();
  }

  /** Resolves once test() holds, re-checked after every change. */
  until(test: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (!test()) return;
        this.listeners.delete(check);
        resolve();
      };
      this.listeners.add(check);
      check();
    });
  }

  async get(namespace: string, name: string) {
    await roundTrip();
    const hc = this.checks.get(key(namespace, name));
    return hc ? copy(hc) : null;
  }

  async list(namespace?: string) {
    await roundTrip();
    return [...this.checks.values()]
      .filter((c) => namespace === undefined || c.metadata.namespace === namespace)
      .map(copy);
  }

  replace(hc: HealthCheck, agent?: string) {
    return this.write('main', hc, agent);
  }

  replaceStatus(hc: HealthCheck, agent?: string) {
    return this.write('status', hc, agent);
  }

  private async write(kind: 'main' | 'status', incoming: HealthCheck, agent?: string): Promise<HealthCheck> {
    await roundTrip();
    this.beforeWrite?.(kind, copy(incoming));
    const stored = this.checks.get(key(incoming.metadata.namespace, incoming.metadata.name));
    if (!stored) throw Object.assign(new Error('not found'), { code: 404 });
    if (incoming.metadata.resourceVersion !== stored.metadata.resourceVersion)
      throw new WriteConflict('Conflict');
    const next: HealthCheck =
      kind === 'status'
        ? { ...copy(stored), status: copy(incoming.status) }
        : { ...copy(incoming), status: copy(stored.status) };
    next.metadata = { ...next.metadata, uid: stored.metadata.uid, resourceVersion: String(++this.rv) };
    if (next.status === undefined) delete next.status;
    this.checks.set(key(next.metadata.namespace, next.metadata.name), next);
    this.writes.push({ kind, stored: copy(next), ...(agent ? { agent } : {}) });
    this.changed();
    return copy(next);
  }

  async listPods(namespace: string, labelSelector: string) {
    await roundTrip();
    const [k, v] = labelSelector.split('=');
    return [...this.pods.values()]
      .filter((p) => p.metadata?.namespace === namespace && p.metadata?.labels?.[k ?? ''] === v)
      .map(copy);
  }

  async createPod(pod: V1Pod): Promise<V1Pod> {
    await roundTrip();
    const k = key(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '');
    if (this.pods.has(k)) throw new WriteConflict('AlreadyExists');
    const created = copy(pod);
    created.metadata = {
      ...created.metadata,
      uid: `uid-${pod.metadata?.name}`,
      resourceVersion: String(++this.rv),
    };
    created.status = { phase: 'Pending' };
    this.pods.set(k, created);
    this.createdPods.push(copy(created));
    this.changed();
    return copy(created);
  }

  async removePod(namespace: string, name: string, uid?: string): Promise<PodRemoval> {
    await roundTrip();
    const pod = this.pods.get(key(namespace, name));
    if (!pod || (uid !== undefined && pod.metadata?.uid !== uid)) return { kind: 'gone' };
    this.pods.delete(key(namespace, name));
    this.changed();
    return { kind: 'deleted' };
  }

  watchPods(opts: Parameters<HealthCheckApi['watchPods']>[0]) {
    return this.watch(opts.signal, () =>
      this.listPods(opts.namespace, opts.labelSelector).then(opts.onChange),
    );
  }

  watchCheck(opts: Parameters<HealthCheckApi['watchCheck']>[0]) {
    return this.watch(opts.signal, () => this.get(opts.namespace, opts.name).then(opts.onChange));
  }

  private watch(signal: AbortSignal, deliver: () => Promise<void>): Promise<void> {
    return new Promise((resolve) => {
      const listener = () => void deliver();
      this.listeners.add(listener);
      listener();
      signal.addEventListener('abort', () => {
        this.listeners.delete(listener);
        resolve();
      });
      if (signal.aborted) resolve();
    });
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
