import { defineConfig } from 'vitest/config';

// Two projects: unit tests (the product's in test/unit, the devkit's in infra/devkit/test) need nothing;
// integration tests share one real local cluster per run, started by the global setup, with a fresh
// namespace per test.
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
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/integration/setup/global-cluster.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // One cluster, two cores: files run one after another; tests inside a file may run concurrently.
          fileParallelism: false,
          pool: 'forks',
        },
      },
    ],
  },
});
