import type { Clock } from '../core/clock.ts';
import type { IdSource } from '../core/ids.ts';
import type { Log } from '../core/log.ts';
import type { KubePort } from '../kube/port.ts';
import type { RunNotifier } from '../notify/run-notifier.ts';
import type { EndpointProbe } from './endpoint-probe.ts';
import type { EventSink } from './events.ts';

/** The ports a run is driven through, from its claim (acquire.ts) to its recorded outcome (finish.ts). */
export interface AcquireDeps {
  kube: KubePort;
  clock: Clock;
  ids: IdSource;
  log: Log;
  /** Announces each recorded outcome (Kubernetes Events); optional, and never fails the run. */
  events?: EventSink;
  /**
   * Tells whether an adopted pod's report endpoint still listens; without it every endpoint counts as
   * possibly alive, so an adopted pod is always kept.
   */
  endpoints?: EndpointProbe;
  /**
   * Decides each outcome's alert transition inside the outcome's own write and delivers what it queued
   * afterwards (lib/notify); absent: no notifications, and the writes are exactly as without it.
   */
  notify?: RunNotifier;
}
