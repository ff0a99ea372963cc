import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isRunPod, runIdOf, runPodsSelector } from '../../lib/check/run-label.ts';

const labelled = (labels: Record<string, string> | undefined): V1Pod => ({ metadata: { name: 'p', labels } });

describe('the run-id label', () => {
  it.each<[string, V1Pod, string | undefined, boolean]>([
    ['a pod of the run', labelled({ 'kuberhealthy-run-id': 'r1' }), 'r1', true],
    ['a pod of another run', labelled({ 'kuberhealthy-run-id': 'r2' }), 'r2', false],
    ['a pod without the label', labelled({ 'kuberhealthy-check-name': 'web' }), undefined, false],
    ['a pod without labels', labelled(undefined), undefined, false],
    ['a pod without metadata', {}, undefined, false],
  ])('%s', (_, pod, runId, ofR1) => {
    expect(runIdOf(pod)).toBe(runId);
    expect(isRunPod(pod, 'r1')).toBe(ofR1);
  });

  it('selects one run by its label', () => {
    expect(runPodsSelector('11111111-2222-4333-8444-555555555555')).toBe(
      'kuberhealthy-run-id=11111111-2222-4333-8444-555555555555',
    );
  });
});
