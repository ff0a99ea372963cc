import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { parallelStartOrder } from './lanes.ts';

/**
 * vitest's order (lanes by sequence.groupOrder, then each project's files by its cache or file size), except
 * that the parallel lane's files start longest first by their measured durations (lanes.ts
 * PARALLEL_DURATIONS_S), the same on a fresh clone as on a machine with vitest's cache.
 */
export class LaneSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const isParallel = (f: TestSpecification) => f.project.name === 'integration';
    const root = this.ctx.config.root;
    const parallel = parallelStartOrder(sorted.filter(isParallel), (f) => relative(root, f.moduleId));
    return sorted.map((f) => (isParallel(f) ? (parallel.shift() as TestSpecification) : f));
  }
}
