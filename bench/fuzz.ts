/**
 * Long schema-driven fuzzing (issue #11 §2): the same generator and checks as
 * test/security/fuzz.test.ts, with as many generated requests per route as FUZZ_RUNS says
 * (default 200) and FUZZ_SEED (default: random, printed so a failure can be replayed).
 *
 *   FUZZ_RUNS=2000 npx tsx bench/fuzz.ts            # PGlite in memory
 *   TEST_DATABASE_URL=… TEST_REDIS_URL=… FUZZ_RUNS=2000 npx tsx bench/fuzz.ts
 *
 * Prints one JSON line: routes, cases, statuses, 5xx count and the first 5xx found, elapsed
 * seconds; exits 1 on any 5xx or when the bystander account's objects changed.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createUser, testEnv } from '../test/helpers/app.js';
import { ROOT_EMAIL, createAccount, publishedService, rootAdmin } from '../test/security/fixtures.js';
import { runFuzz, snapshot } from '../test/security/fuzz-run.js';

const runs = Number(process.env.FUZZ_RUNS ?? 200);
const seed = Number(process.env.FUZZ_SEED ?? randomBytes(4).readInt32LE(0));
const started = performance.now();
const { app, ctx } = await buildApp(loadConfig(testEnv({ ADMIN_EMAILS: ROOT_EMAIL })));
try {
  const root = await rootAdmin(app);
  const shared = await publishedService(app, ctx, root);
  const fuzzer = await createAccount(app, shared, { role: 'admin', admin: root });
  const bystander = await createAccount(app, shared);
  const throwawayUserId = (await createUser(app)).userId;
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const before = await snapshot(app, bystander);
  const report = await runFuzz(app, doc, fuzzer, { runs, seed, throwawayUserId });
  const intact = isDeepStrictEqual(await snapshot(app, bystander), before);
  const engine = process.env.TEST_DATABASE_URL ? 'postgresql' : 'pglite';
  console.log(
    JSON.stringify({
      engine,
      seed,
      runs_per_route: runs,
      routes: report.routes,
      cases: report.cases,
      statuses: report.byStatus,
      server_errors: report.serverErrors.length,
      first_server_errors: report.serverErrors.slice(0, 5),
      bystander_intact: intact,
      seconds: Math.round((performance.now() - started) / 1000),
    }),
  );
  process.exitCode = report.serverErrors.length === 0 && intact ? 0 : 1;
} finally {
  await app.close();
}
