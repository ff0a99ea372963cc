import { defineConfig } from 'vitest/config';
import {
  DEPLOY_LANE,
  INTEGRATION_FILES,
  KUBERHEALTHY_LANE,
  PARALLEL_WORKERS,
} from './test/integration/setup/lanes.ts';

// Projects: `unit` (test/unit and the devkit's infra/devkit/test) needs nothing. The integration suite is
// three lanes (test/integration/setup/lanes.ts says which file goes where, and the rule for a new one):
// - `integration-deploy`: files that install infra/deploy or the chart (khrun's namespace and cluster-wide
//   objects, shared by all of them): one file at a time.
// - `integration-kuberhealthy`: files that run the real Kuberhealthy v2/v3, which act on every check of the
//   cluster: one file at a time.
// - `integration`: the rest, each in namespaces of its own: PARALLEL_WORKERS files at once.
// Each lane's global setup starts a local cluster of its own (the next free pod-network slot), so
// `npm run test:integration` (setup/run-lanes.ts) runs the three lanes at the same time, in three vitest
// processes: vitest runs the projects of one process one group after another (sequence.groupOrder; a group
// has one maxWorkers), never a one-at-a-time lane beside a parallel one. Run files of any lane with
// `npx vitest run test/integration/NAME.test.ts` (only the lanes those files are in start a cluster).
const integration = {
  environment: 'node' as const,
  globalSetup: ['test/integration/setup/global-cluster.ts'],
  testTimeout: 120_000,
  hookTimeout: 120_000,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'infra/devkit/test/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          ...integration,
          name: 'integration-deploy',
          include: [...DEPLOY_LANE],
          fileParallelism: false,
          // Groups run in order within one vitest process (`npx vitest run` of files of several lanes).
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          ...integration,
          name: 'integration-kuberhealthy',
          include: [...KUBERHEALTHY_LANE],
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
      {
        test: {
          ...integration,
          name: 'integration',
          include: [INTEGRATION_FILES],
          exclude: [...DEPLOY_LANE, ...KUBERHEALTHY_LANE],
          maxWorkers: PARALLEL_WORKERS,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
