/**
 * The in-process platform the search benchmarks measure: in-memory PGlite (or
 * `BENCH_DATABASE_URL`), silent logs, rate limits out of the way, listening on an ephemeral
 * loopback port. `overrides` are environment variables on top (e.g. `ALLOW_LOOPBACK_UPSTREAMS`).
 */
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';

export async function startBenchApp(overrides: Record<string, string | undefined> = {}) {
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_IN_MEMORY: 'on',
    DATABASE_URL: process.env.BENCH_DATABASE_URL,
    RATE_LIMIT_USER: '100000000',
    RATE_LIMIT_PRO: '100000000',
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    PORT: '0',
    HOST: '127.0.0.1',
    ...overrides,
  });
  const { app, ctx } = await buildApp(config);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, ctx, config, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
}
