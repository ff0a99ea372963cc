import type { Clock } from '../core/clock.ts';
import { statusCodeOf } from '../kube/errors.ts';
import {
  type Blocking,
  decideBlocking,
  type ParentRef,
  type ParentView,
  parentLabel,
  type ReadParent,
  resolveParents,
} from './dependencies.ts';
import type { PolicySubject } from './policy-source.ts';

/** How long a parent's state read is reused by the same process (a batch, serve's runs, CAS retries). */
const REUSE_MS = 15_000;

export interface ParentReads {
  /** Whether a failing child is blocked by its parents, and what was wrong with them: reads each parent once. */
  blocking(child: PolicySubject, refs: readonly ParentRef[]): Promise<Blocking>;
  /** Reads made so far. */
  count(): number;
}

/**
 * A process's reads of parents' states: at most one per parent per 15 s (a decision retried after a
 * conflict, the checks of a batch sharing a parent), only when a failing child names parents. Without a
 * reader, parents are not followed (nothing blocks) and that is said once per decision as a problem.
 */
export function parentReads(read: ReadParent | undefined, clock: Clock): ParentReads {
  const cache = new Map<string, { atMs: number; view: Promise<ParentView | null | Error> }>();
  let reads = 0;
  return {
    count: () => reads,
    async blocking(child, refs) {
      const childLabel = parentLabel(child);
      if (!read)
        return {
          problems: [`${childLabel} names parents, which this process cannot read: not taken into account`],
        };
      const nowMs = clock.nowMs();
      const parents = resolveParents(refs, child);
      const views = await Promise.all(
        parents.map(async (parent) => {
          const key = parentLabel(parent);
          let hit = cache.get(key);
          if (!hit || nowMs - hit.atMs > REUSE_MS) {
            reads++;
            const view = read(parent).catch((error: unknown) => {
              const code = statusCodeOf(error);
              return new Error(
                code === 403
                  ? `forbidden: grant the runner get on its ${parent.kind === 'healthcheck' ? 'HealthCheck' : 'khstate'} in namespace ${parent.namespace}`
                  : error instanceof Error
                    ? error.message
                    : String(error),
              );
            });
            hit = { atMs: nowMs, view };
            cache.set(key, hit);
          }
          return { parent, view: await hit.view };
        }),
      );
      return decideBlocking(childLabel, views);
    },
  };
}
