import type { CasLoop } from '../kube/cas.ts';

/** Anything that keeps a notify state in its annotations: a khstate, a HealthCheck. */
export interface Annotated {
  metadata: { namespace: string; name: string; annotations?: Record<string, string> };
}

/**
 * Where one object's outbox is written: a compare-and-swap loop on the object (kube/cas.ts), the store
 * supplying read and persist. The runner's is its KubePort (a HealthCheck's through its khstate view),
 * the tick's its list port's writes.
 */
export interface OutboxStore<S extends Annotated> {
  update<R>(loop: Pick<CasLoop<S, R>, 'writer' | 'maxAttempts' | 'decide' | 'initial' | 'log'>): Promise<R>;
}

/** The writer name of every outbox write (the user agent `khrun/notify`, for the audit log). */
export const NOTIFY_WRITER = 'notify';
