import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration suites start servers on random ports; two cores are enough for two forks.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    reporters: ['default'],
    // The functions run inside the test processes: keep their JSON logs and EMF metrics out of
    // the test output. A test about logging sets its own level.
    env: { POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true' },
  },
});
