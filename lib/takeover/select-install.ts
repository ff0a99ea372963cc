import { installRef, type KuberhealthyInstall } from './installations.ts';

export type Selected =
  | { kind: 'found'; install: KuberhealthyInstall }
  | { kind: 'none' | 'ambiguous'; message: string };

/**
 * The Kuberhealthy a command acts on (pure): the one named (namespace/name), else the only candidate.
 * want: 'running' for takeover (replicas > 0, or already taken over: a second takeover resumes the
 * first), 'taken-over' for handback (it carries khrun's takeover record).
 */
export function selectInstall(
  installs: readonly KuberhealthyInstall[],
  opts: { named?: string; namespace?: string; want: 'running' | 'taken-over' },
): Selected {
  if (opts.namespace && !opts.named) {
    const namespace = opts.namespace;
    return selectInstall(
      installs.filter((i) => i.namespace === namespace),
      { want: opts.want },
    );
  }
  const list = installs.map(installRef).join(', ') || 'none';
  if (opts.named) {
    const install = installs.find((i) => installRef(i) === opts.named);
    if (install) return { kind: 'found', install };
    return { kind: 'none', message: `no Kuberhealthy Deployment ${opts.named} (found: ${list})` };
  }
  const candidates = installs.filter((i) =>
    opts.want === 'running' ? i.replicas > 0 || i.takenOver : i.takenOver,
  );
  if (candidates.length === 1) return { kind: 'found', install: candidates[0]! };
  const flag = opts.want === 'running' ? '--from' : '--to';
  if (candidates.length === 0) {
    const what = opts.want === 'running' ? 'running Kuberhealthy' : 'Kuberhealthy taken over by khrun';
    return {
      kind: 'none',
      message: `no ${what} found (Kuberhealthy Deployments: ${list}); name one with ${flag} NAMESPACE/NAME`,
    };
  }
  return {
    kind: 'ambiguous',
    message: `${candidates.length} Kuberhealthy Deployments found (${candidates.map(installRef).join(', ')}); name one with ${flag} NAMESPACE/NAME`,
  };
}
