import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { abortableDelay } from '../../../../../lib/core/abort.ts';
import { apiErrorMessage } from '../../../../../lib/kube/errors.ts';
import type { Spawner } from '../spawner.ts';
import { adoptRecords } from './adopt.ts';
import type { KubeletApi } from './api.ts';
import { runContainers } from './container-loop.ts';
import type { ContainerProcess, Tools } from './container-process.ts';
import { containerLogPath, type RunnerContext } from './container-runner.ts';
import type { HostMountPoints } from './host-paths.ts';
import type { ImageMap } from './image-map.ts';
import type { IpPool } from './ip-pool.ts';
import { createSandbox, retryUntilStopped } from './pod-setup.ts';
import type { RestartBackoff } from './restart.ts';
import { killAllInNetns, type Sandbox, type SandboxOps } from './sandbox.ts';
import { apiTime, buildPodStatus, type PodRuntime } from './status.ts';
import { PodStatusWriter } from './status-writer.ts';
import { type PreparedVolume, prepareVolumes } from './volumes.ts';

export type KubeletLog = (line: string, fields?: Record<string, unknown>) => void;

export interface PodWorkerDeps {
  api: KubeletApi;
  ipPool: IpPool;
  sandboxOps: SandboxOps;
  hostIp: string;
  apiServer: { host: string; port: number };
  imageNodePath?: string;
  imageMap: ImageMap;
  podsDir: string;
  tools: Tools;
  spawner: Spawner;
  hostPaths: HostMountPoints;
  backoff: RestartBackoff;
  log: KubeletLog;
  /** The worker is finished and its pod is gone from the API: forget it. */
  onGone(uid: string): void;
}

/** Why the worker stops its containers: the pod's deletion, its disappearance, or the kubelet's stop. */
type Mode = 'active' | 'deleting' | 'removed' | 'shutdown';

/**
 * One pod's lifecycle on this node: sandbox (IP + network namespace), volumes, init containers in order,
 * then all containers under the restart policy, status written at every change, and on deletion
 * SIGTERM → grace period → SIGKILL → final status → the final delete (grace 0, uid precondition).
 */
export class PodWorker {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly podDir: string;
  private readonly rt: PodRuntime;
  private readonly writer: PodStatusWriter;
  private readonly stopping = new AbortController();
  private readonly live = new Map<ContainerProcess, string>();
  private mode: Mode = 'active';
  private killed = false;
  private killTimer: NodeJS.Timeout | undefined;
  private finished = false;
  private deleteStarted = false;
  private done: Promise<void> = Promise.resolve();
  /** Aborted by shutdown(): ends the final-delete retries. */
  private readonly halted = new AbortController();
  private sandbox: Sandbox | undefined;
  private volumes: ReadonlyMap<string, PreparedVolume> = new Map();

  constructor(
    pod: V1Pod,
    private readonly deps: PodWorkerDeps,
  ) {
    this.uid = pod.metadata!.uid!;
    this.namespace = pod.metadata!.namespace!;
    this.name = pod.metadata!.name!;
    this.podDir = join(deps.podsDir, `${this.namespace}_${this.name}_${this.uid}`);
    const records = adoptRecords(pod);
    this.rt = { hostIp: deps.hostIp, sandboxReady: false, terminal: false, ...records };
    this.writer = new PodStatusWriter({
      api: deps.api,
      initial: pod,
      build: (p) => buildPodStatus(p, this.rt, apiTime(new Date())),
      log: (line, fields) => deps.log(line, { pod: `${this.namespace}/${this.name}`, ...fields }),
    });
  }

  start(): void {
    this.done = this.run();
  }

  /** A newer copy of the pod from the watch. */
  update(pod: V1Pod): void {
    this.writer.setLatest(pod);
    if (pod.metadata?.deletionTimestamp && this.mode === 'active') {
      this.mode = 'deleting';
      this.log('pod deletion requested', { gracePeriodSeconds: pod.metadata.deletionGracePeriodSeconds });
      if (this.finished) void this.deleteNow();
      else this.stop((pod.metadata.deletionGracePeriodSeconds ?? 30) * 1000);
    }
  }

  /** The pod is gone from the API server (force-deleted, or deleted by us): stop and forget it. */
  removed(): void {
    if (this.mode === 'removed' || this.mode === 'shutdown') return;
    this.mode = 'removed';
    this.writer.close();
    if (this.finished) void this.forget();
    else this.stop(Math.min(this.writer.pod.spec?.terminationGracePeriodSeconds ?? 30, 2) * 1000);
  }

  /** The kubelet stops: kill everything (SIGKILL after graceMs), free the sandbox, write nothing. */
  async shutdown(graceMs: number): Promise<void> {
    this.mode = 'shutdown';
    this.halted.abort();
    this.writer.close();
    if (!this.finished) this.stop(graceMs);
    await this.done;
  }

  /** The log file of a container's current run (or the previous one); undefined before its first start. */
  logFile(container: string, previous = false): string | undefined {
    const record = [...this.rt.initContainers, ...this.rt.containers].find((r) => r.name === container);
    if (!record) return undefined;
    const count = record.restartCount - (previous ? 1 : 0);
    const started = record.state.kind !== 'waiting' || record.lastTerminated !== undefined;
    if (count < 0 || (!previous && !started && count === 0)) return undefined;
    return containerLogPath(this.podDir, container, count);
  }

  /** Resolves when the named container's current process exits (at once when none runs). */
  async whenNotRunning(container: string): Promise<void> {
    const proc = [...this.live].find(([, name]) => name === container)?.[0];
    await proc?.exited.catch(() => undefined);
  }

  private log(line: string, fields?: Record<string, unknown>): void {
    this.deps.log(line, { pod: `${this.namespace}/${this.name}`, uid: this.uid, ...fields });
  }

  private stop(graceMs: number): void {
    this.stopping.abort();
    for (const proc of this.live.keys()) proc.kill('SIGTERM');
    clearTimeout(this.killTimer);
    this.killTimer = setTimeout(() => void this.killAll(), graceMs);
  }

  private async killAll(): Promise<void> {
    this.killed = true;
    for (const proc of this.live.keys()) proc.kill('SIGKILL');
    if (this.sandbox?.netns) await killAllInNetns(this.deps.sandboxOps, this.sandbox.netns);
  }

  private async run(): Promise<void> {
    try {
      this.rt.startTime ??= apiTime(new Date());
      this.writer.request();
      if (await this.setUp()) {
        const ctx = this.runnerContext();
        const log = (line: string, fields?: Record<string, unknown>) => this.log(line, fields);
        const spec = this.writer.pod.spec;
        if (await runContainers(ctx, log, spec?.initContainers ?? [], this.rt.initContainers, true)) {
          await runContainers(ctx, log, spec?.containers ?? [], this.rt.containers, false);
        }
      }
    } catch (error) {
      this.log('pod worker failed', { error: apiErrorMessage(error) });
    } finally {
      await this.tearDownSandbox();
      clearTimeout(this.killTimer);
      this.rt.terminal = true;
      this.finished = true;
    }
    this.log('pod finished', { phase: buildPodStatus(this.writer.pod, this.rt, '').phase, mode: this.mode });
    if (this.mode === 'active' || this.mode === 'deleting') await this.writer.flush();
    if (this.mode === 'deleting') await this.deleteNow();
    if (this.mode === 'removed') await this.forget();
  }

  /** Sandbox and volumes, retried with back-off until they work or the pod stops. */
  private async setUp(): Promise<boolean> {
    const opts = {
      signal: this.stopping.signal,
      backoff: this.deps.backoff,
      onFailure: (message: string, retryInMs: number) => {
        this.log('pod setup failed; retrying', { error: message, retryInMs });
        for (const r of [...this.rt.initContainers, ...this.rt.containers]) {
          if (r.state.kind === 'waiting') r.state = { ...r.state, message };
        }
        this.writer.request();
      },
    };
    const sandbox = await retryUntilStopped(
      'FailedCreatePodSandBox',
      () => createSandbox(this.writer.pod, this.deps),
      opts,
    );
    if (!sandbox) return false;
    this.sandbox = sandbox;
    this.rt.podIp = sandbox.podIp;
    this.rt.sandboxReady = true;
    // Publish the pod IP before any container starts, as a kubelet's sandbox does: servers that identify
    // callers by source address (Kuberhealthy's header-less report clients) look it up in the status.
    // Bounded, so an unreachable API server does not hold the pod back.
    await Promise.race([this.writer.flush(), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    const volumes = await retryUntilStopped(
      'FailedMount',
      () =>
        prepareVolumes({
          pod: this.writer.pod,
          api: this.deps.api,
          podDir: this.podDir,
          podIp: sandbox.podIp,
          hostIp: this.deps.hostIp,
        }),
      opts,
    );
    if (!volumes) return false;
    this.volumes = volumes;
    return true;
  }

  private runnerContext(): RunnerContext {
    return {
      pod: () => this.writer.pod,
      sandbox: this.sandbox!,
      volumes: this.volumes,
      hostIp: this.deps.hostIp,
      apiServer: this.deps.apiServer,
      imageNodePath: this.deps.imageNodePath,
      imageMap: this.deps.imageMap,
      api: this.deps.api,
      tools: this.deps.tools,
      spawner: this.deps.spawner,
      hostPaths: this.deps.hostPaths,
      podDir: this.podDir,
      signal: this.stopping.signal,
      changed: () => this.writer.request(),
      flush: () => this.writer.flush(),
      backoff: this.deps.backoff,
      track: (name, proc) => {
        this.live.set(proc, name);
        if (this.killed) proc.kill('SIGKILL');
        else if (this.stopping.signal.aborted) proc.kill('SIGTERM');
        return () => this.live.delete(proc);
      },
    };
  }

  private async tearDownSandbox(): Promise<void> {
    const sandbox = this.sandbox;
    this.rt.sandboxReady = false;
    if (!sandbox?.netns) return;
    this.sandbox = undefined;
    // delete kills whatever is left in the namespace first (SandboxOps.delete).
    await this.deps.sandboxOps
      .delete(this.uid)
      .catch((error: unknown) => this.log('sandbox removal failed', { error: String(error) }));
    this.deps.ipPool.release(sandbox.podIp);
  }

  /** The kubelet's final delete, retried until the API server takes it (the pod stays Terminating else). */
  private async deleteNow(): Promise<void> {
    if (this.deleteStarted) return;
    this.deleteStarted = true;
    let delayMs = this.deps.backoff.initialMs;
    while (this.mode === 'deleting') {
      try {
        await this.deps.api.deletePodNow(this.namespace, this.name, this.uid);
        this.log('pod deleted');
        return;
      } catch (error) {
        this.log('final pod delete failed; retrying', { error: apiErrorMessage(error) });
        await abortableDelay(delayMs, this.halted.signal).catch(() => undefined);
        delayMs = Math.min(delayMs * 2, this.deps.backoff.maxMs);
      }
    }
  }

  private async forget(): Promise<void> {
    await rm(this.podDir, { recursive: true, force: true }).catch(() => undefined);
    this.deps.onGone(this.uid);
  }
}
