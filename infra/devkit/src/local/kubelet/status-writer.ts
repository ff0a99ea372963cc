import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { abortableDelay } from '../../../../../lib/core/abort.ts';
import { ApiErrorKind, apiErrorMessage, classifyApiError } from '../../../../../lib/kube/errors.ts';
import type { KubeletApi } from './api.ts';

export interface StatusWriterOptions {
  api: KubeletApi;
  /** The pod as last seen (watch or a write's response); the writer updates it through setLatest. */
  initial: V1Pod;
  /** Computes the whole status from the pod as read; called anew for every attempt. */
  build: (pod: V1Pod) => V1PodStatus;
  log: (line: string, fields?: Record<string, unknown>) => void;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Writes one pod's status, level-based: request() marks it dirty, a single loop writes the latest
 * computed status with the pod's resourceVersion as precondition. A 409 re-reads the pod and computes
 * again; an unreachable API server is retried with capped backoff until it answers (so a status change
 * made during an API server restart is written once it is back); a 404 or another uid ends the writer.
 */
export class PodStatusWriter {
  private latest: V1Pod;
  private dirty = false;
  private running: Promise<void> | undefined;
  private lastWritten = '';
  private readonly closed = new AbortController();
  private readonly uid: string;

  constructor(private readonly opts: StatusWriterOptions) {
    this.latest = opts.initial;
    this.uid = opts.initial.metadata?.uid ?? '';
  }

  /** A newer copy of the pod from the watch; ignored when older than what the writer has. */
  setLatest(pod: V1Pod): void {
    if (pod.metadata?.uid !== this.uid) return;
    if (Number(pod.metadata?.resourceVersion ?? 0) >= Number(this.latest.metadata?.resourceVersion ?? 0)) {
      this.latest = pod;
    }
  }

  get pod(): V1Pod {
    return this.latest;
  }

  /** Asks for the current state to be written; returns at once. */
  request(): void {
    if (this.closed.signal.aborted) return;
    this.dirty = true;
    this.running ??= this.loop().finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves once everything requested so far is written, or the writer was closed. */
  async flush(): Promise<void> {
    this.request();
    while (this.running) await this.running;
  }

  close(): void {
    this.closed.abort();
  }

  get isClosed(): boolean {
    return this.closed.signal.aborted;
  }

  private async loop(): Promise<void> {
    const initialMs = this.opts.initialBackoffMs ?? 200;
    let backoffMs = initialMs;
    let conflicts = 0;
    while (this.dirty && !this.closed.signal.aborted) {
      this.dirty = false;
      const pod = this.latest;
      const status = this.opts.build(pod);
      const serialized = JSON.stringify(status);
      if (serialized === this.lastWritten) continue;
      try {
        const written = await this.opts.api.replacePodStatus({ ...pod, status });
        this.lastWritten = serialized;
        this.setLatest(written);
        backoffMs = initialMs;
        conflicts = 0;
      } catch (error) {
        this.dirty = true;
        const kind = classifyApiError(error);
        if (kind === ApiErrorKind.NotFound) {
          this.close();
          return;
        }
        if (kind === ApiErrorKind.Conflict) {
          // Someone else wrote the pod: re-read and decide again, backing off only if it keeps happening.
          if (conflicts++ >= 5) await abortableDelay(backoffMs, this.closed.signal).catch(() => undefined);
          const fresh = await this.opts.api
            .readPod(pod.metadata!.namespace!, pod.metadata!.name!)
            .catch(() => pod);
          if (!fresh || fresh.metadata?.uid !== this.uid) {
            this.close();
            return;
          }
          this.latest = fresh;
          continue;
        }
        this.opts.log('pod status write failed; retrying', {
          error: apiErrorMessage(error),
          retryInMs: backoffMs,
        });
        await abortableDelay(backoffMs, this.closed.signal).catch(() => undefined);
        backoffMs = Math.min(backoffMs * 2, this.opts.maxBackoffMs ?? 3_000);
      }
    }
  }
}
