import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import {
  EXCLUSIVE,
  INTEGRATION_FILES,
  PARALLEL_WORKERS,
  SERIAL_LANES,
} from './test/integration/setup/lanes.ts';
import { LaneSequencer } from './test/integration/setup/sequencer.ts';
import { filesReplacingModules } from './test/unit/setup/isolation.ts';

// Projects: `unit` and `unit-mocks` (test/unit and the devkit's infra/devkit/test; `--project 'unit*'` runs
// both) need nothing: `unit` shares worker processes between files, `unit-mocks` holds the files that
// replace a module and so need a process each (test/unit/setup/isolation.ts). The integration suite is
// three lanes (test/integration/setup/lanes.ts says which file goes where and why, and the rule for a new
// one):
// - `integration-serial-1` and `integration-serial-2`: the EXCLUSIVE files, one at a time: those that
//   install infra/deploy or the chart (khrun's namespace and cluster-wide objects, which each applies its
//   own variant of) and those that run the real Kuberhealthy v2/v3 (which act on every check of the
//   cluster). Two lanes only to share them out by time.
// - `integration`: the rest, each in namespaces of its own, PARALLEL_WORKERS files at once.
// Each lane's global setup starts a local cluster of its own (the next free pod-network slot), and
// `npm run test:integration` (setup/run-lanes.ts) runs the three lanes at the same time, in three vitest
// processes: vitest runs the projects of one process one group after another (sequence.groupOrder; a group
// has one maxWorkers), never a one-at-a-time lane beside a parallel one. Run some files of one lane with
// `npx vitest run test/integration/NAME.test.ts` (only that lane's cluster starts). Files of two lanes in
// one command do not work: the second lane's files fail reading the first lane's kubeconfig (gone with its
// cluster); run one command per lane, or `npm run test:integration`.
const UNIT_FILES = ['test/unit/**/*.test.ts', 'infra/devkit/test/**/*.test.ts'];
const UNIT_WORKERS = Math.max(2, availableParallelism() - 1);
const UNIT_MOCKS = filesReplacingModules(import.meta.dirname, ['test/unit', 'infra/devkit/test']);

const integration = {
  environment: 'node' as const,
  globalSetup: ['test/integration/setup/global-cluster.ts'],
  testTimeout: 120_000,
  hookTimeout: 120_000,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    // The parallel lane's files start longest first (lanes.ts PARALLEL_DURATIONS_S).
    sequence: { sequencer: LaneSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          include: UNIT_FILES,
          exclude: UNIT_MOCKS,
          environment: 'node',
          isolate: false,
          // vitest's default is one worker fewer than the cores: one on 2 cores, where the unit files
          // wait on the processes they spawn as much as they compute (144 s with one, 116 s with two).
          maxWorkers: UNIT_WORKERS,
        },
      },
      {
        test: { name: 'unit-mocks', include: UNIT_MOCKS, environment: 'node', maxWorkers: UNIT_WORKERS },
      },
      ...Object.entries(SERIAL_LANES).map(([name, files], i) => ({
        test: {
          ...integration,
          name,
          include: [...files],
          fileParallelism: false,
          // One process, one file after another: each file's import of lib/ and client-node is done once.
          isolate: false,
          // Groups run in order within one vitest process.
          sequence: { groupOrder: i + 1 },
        },
      })),
      {
        test: {
          ...integration,
          name: 'integration',
          include: [INTEGRATION_FILES],
          exclude: Object.keys(EXCLUSIVE),
          maxWorkers: PARALLEL_WORKERS,
          sequence: { groupOrder: Object.keys(SERIAL_LANES).length + 1 },
        },
      },
    ],
  },
});
