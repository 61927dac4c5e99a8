import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files that need a process of their own: the OpenTelemetry `pg` instrumentation patches the `pg`
 * module when it loads, so its statement spans show only where the SDK starts before any other file
 * of the worker has loaded `pg` (as `npm start` does).
 */
const OWN_PROCESS = ['test/telemetry/db-jobs.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    // Each project names its own files (a project that extends this config adds to, not replaces, its arrays).
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...OWN_PROCESS],
          // Test files share their worker's module cache (each still builds and closes its own app):
          // importing the platform once per worker instead of once per file cut the PGlite pass from
          // ~860 s to ~300 s. Files must not rely on module-level state being fresh (see
          // test/modules/deployments/fixtures.ts).
          isolate: false,
        },
      },
      { extends: true, test: { name: 'own-process', include: OWN_PROCESS, isolate: true } },
    ],
  },
});
