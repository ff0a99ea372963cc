import type { RunTarget } from '../core/run-target.ts';
import type { RunResult, TargetRun } from '../kinds/kind.ts';
import { openSession, type SessionSettings } from './session.ts';

/**
 * One invocation of the runner for one object of any kind: a session of one that hosts the report endpoint
 * for the run's duration (unless an external one is configured), performs the run, and stops everything
 * it started.
 */
export async function runTarget(
  settings: SessionSettings,
  run: Omit<TargetRun, 'target'> & { target: RunTarget },
): Promise<RunResult> {
  const session = await openSession({ ...settings, namespaces: [run.target.namespace] });
  try {
    return await session.run(run);
  } finally {
    await session.close();
  }
}
