/**
 * The in-process platform the search benchmarks measure: in-memory PGlite (or
 * `BENCH_DATABASE_URL`), silent logs, rate limits out of the way, listening on an ephemeral
 * loopback port. `overrides` are environment variables on top (e.g. `ALLOW_LOOPBACK_UPSTREAMS`).
 */
import type { FastifyInstance } from 'fastify';
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
    // The benchmarks sign in with `POST /auth/test` as a `pro` user (higher plan limits): elevated
    // test roles need both switches since issue 11.
    AUTH_TEST_TOKENS: 'on',
    AUTH_TEST_ROLES: 'on',
    PORT: '0',
    HOST: '127.0.0.1',
    ...overrides,
  });
  const { app, ctx } = await buildApp(config);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, ctx, config, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
}

/**
 * Sign in a fresh `pro` test user through `POST /auth/test`: the bearer headers and the user id
 * (the token's `sub`). Throws with the answer when the route refuses (so a configuration change
 * fails here, not later as a `TypeError`).
 */
export async function benchUser(
  app: FastifyInstance,
  email: string,
): Promise<{ headers: { authorization: string }; userId: string }> {
  const res = await app.inject({ method: 'POST', url: '/auth/test', payload: { email, roles: ['pro'] } });
  if (res.statusCode !== 200) throw new Error(`POST /auth/test: ${res.statusCode} ${res.body}`);
  const token = res.json().access_token as string;
  const userId = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sub as string;
  return { headers: { authorization: `Bearer ${token}` }, userId };
}
