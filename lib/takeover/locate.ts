import { findKuberhealthy, type KuberhealthyInstall } from './installations.ts';
import type { TakeoverKube, TakeoverStates } from './port.ts';
import { selectInstall } from './select-install.ts';

/** The Kuberhealthy a takeover command acts on, and where its checks keep their state. */
export type Located =
  | { kind: 'found'; install: KuberhealthyInstall; store: TakeoverStates }
  /** No single install matches: the message says which exist and which flag names one. */
  | { kind: 'not-found'; message: string }
  /** A v3 install whose HealthChecks this khrun's port cannot reach. */
  | { kind: 'unreachable'; install: KuberhealthyInstall };

/**
 * Lists the Deployments once and picks the install (selectInstall), then its state store: v2's khstates,
 * v3's HealthChecks. Reads only.
 */
export async function locateInstall(
  kube: TakeoverKube,
  opts: { named?: string; namespace?: string; want: 'running' | 'taken-over' },
): Promise<Located> {
  const selected = selectInstall(findKuberhealthy(await kube.listDeployments()), opts);
  if (selected.kind !== 'found') return { kind: 'not-found', message: selected.message };
  const install = selected.install;
  const store = install.line === 'v3' ? kube.healthChecks : kube;
  return store ? { kind: 'found', install, store } : { kind: 'unreachable', install };
}
