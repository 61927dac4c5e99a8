import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    // Test files share their worker's module cache (each still builds and closes its own app):
    // importing the platform once per worker instead of once per file cut the PGlite pass from
    // ~860 s to ~300 s. Files must not rely on module-level state being fresh (see
    // test/modules/deployments/fixtures.ts).
    isolate: false,
    reporters: ['default'],
  },
});
