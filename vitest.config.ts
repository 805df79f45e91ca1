import { defineConfig, type ViteUserConfig } from 'vitest/config';

type Reporters = NonNullable<NonNullable<ViteUserConfig['test']>['reporters']>;

// In CI a JSON report is written too, so .ci/run can print a plain "N passed, N failed" line.
const reporters: Reporters = process.env['CI']
  ? ['default', ['json', { outputFile: 'node_modules/.cache/axon/vitest-results.json' }]]
  : ['default'];

export default defineConfig({
  test: {
    reporters,
    // Run before each test file of every project: fails a test in which XState warns of an
    // event sent to a stopped actor (test/support/unexpected-errors.ts).
    setupFiles: ['test/support/setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.int.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.int.test.ts'],
          // Only integration tests use Redis. Here rather than at the root: a root globalSetup
          // is inherited by every project (`extends: true`) and would run once per project.
          globalSetup: [
            'test/support/redis-setup.ts',
            'test/support/redis-cluster-setup.ts',
            'test/support/container-setup.ts',
          ],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          // Every server test again — the HTTP API, workflow threads, the trace UI, the
          // framework bridges and their front door — with each runtime's runs in PostgreSQL
          // (issue 32: `axon serve --postgres` passes the same tests as SQLite). Each test
          // takes its store from test/support/server.ts (`testStore`, `useTestServers`'
          // `start` and `runtime`), which reads AXON_TEST_STORE; none keeps its own.
          name: 'http-on-postgres',
          include: ['test/server/**/*.int.test.ts'],
          env: { AXON_TEST_STORE: 'postgres' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          // Container placement's tests again on docker (the `integration` project runs them
          // on podman, the first engine found): every isolation limit, death and protocol
          // breach proven on both engines. Needs a docker daemon that answers; without one
          // the run stops saying so (.ci/run installs docker.io and starts dockerd).
          name: 'containers-on-docker',
          include: ['test/placement/container/*.int.test.ts'],
          env: { AXON_TEST_CONTAINER_ENGINE: 'docker' },
          globalSetup: ['test/support/container-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
