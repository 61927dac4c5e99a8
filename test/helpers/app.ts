/**
 * Test helper (fastify/demo `test/helper.ts` style): build the app per test file on an in-memory
 * PGlite — or on PostgreSQL/Redis when `TEST_DATABASE_URL` / `TEST_REDIS_URL` are set — and
 * close it after. Tests isolate by creating their own users, never by truncating tables.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll } from 'vitest';
import { buildApp, type BuiltApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';

/** Environment for tests: generous rate limits, loopback upstreams admitted, test tokens with elevated roles on. */
export function testEnv(overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATABASE_URL: process.env.TEST_DATABASE_URL,
    DATABASE_IN_MEMORY: 'on',
    REDIS_URL: process.env.TEST_REDIS_URL,
    RATE_LIMIT_USER: '100000',
    RATE_LIMIT_PRO: '100000',
    RATE_LIMIT_ANONYMOUS: '100000',
    ALLOW_LOOPBACK_UPSTREAMS: 'on',
    // Tests ask /auth/test for pro/enterprise/admin users: both switches are needed for that.
    AUTH_TEST_TOKENS: 'on',
    AUTH_TEST_ROLES: 'on',
    // Sign-in limits high enough for tests that log in many times (the limits have their own tests).
    AUTH_ATTEMPTS_PER_ACCOUNT: '100000',
    AUTH_ATTEMPTS_PER_IP: '100000',
    // Own Redis counters per app, so parallel test files never share a rate-limit bucket.
    RATE_LIMIT_REDIS_PREFIX: `test:rl:${randomBytes(6).toString('hex')}:`,
    // Own realtime-analytics counters per app as well.
    ANALYTICS_REDIS_PREFIX: `test:rt:${randomBytes(6).toString('hex')}:`,
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    // The cheap lexical embedder, except where a test asks for another (the default, the sentence
    // encoder, costs a worker and seconds of model loading; retrieval-quality tests choose it).
    ...(overrides.EMBEDDINGS_URL ? {} : { EMBEDDINGS_PROVIDER: 'local' }),
    ...overrides,
  };
}

/** Build an app for this test file (closed automatically after the file). */
export async function setupApp(
  overrides: Record<string, string | undefined> = {},
): Promise<BuiltApp & { config: Config }> {
  const config = loadConfig(testEnv(overrides));
  const built = await buildApp(config);
  afterAll(async () => {
    await built.app.close();
  });
  return { ...built, config };
}

/** A fresh user with a bearer token (via `POST /auth/test`). */
export interface TestUser {
  userId: string;
  subject: string;
  email: string;
  token: string;
  refreshToken: string;
  headers: { authorization: string };
}

/** Create a user through the public API and return its token. */
export async function createUser(
  app: FastifyInstance,
  opts: { roles?: string[]; email?: string } = {},
): Promise<TestUser> {
  const email = opts.email ?? `u-${randomBytes(6).toString('hex')}@example.test`;
  const res = await app.inject({
    method: 'POST',
    url: '/auth/test',
    payload: { email, ...(opts.roles ? { roles: opts.roles } : {}) },
  });
  if (res.statusCode !== 200) throw new Error(`createUser failed: ${res.statusCode} ${res.body}`);
  const body = res.json();
  const token = body.access_token as string;
  const me = await app.inject({ method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${token}` } });
  return {
    userId: JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sub,
    subject: me.json().user_id,
    email,
    token,
    refreshToken: body.refresh_token,
    headers: { authorization: `Bearer ${token}` },
  };
}

/**
 * `app.inject` that asserts the status and returns the parsed JSON body, typed as `T` when the
 * caller names it (`call<Static<typeof AgentSchema>>(…)`); untyped (`any`) otherwise.
 */
export async function call<T = any>(
  app: FastifyInstance,
  opts: InjectOptions,
  status: number,
): Promise<{ res: LightMyRequestResponse; body: T }> {
  const res = await app.inject(opts);
  if (res.statusCode !== status)
    throw new Error(`${opts.method} ${opts.url}: expected ${status}, got ${res.statusCode}: ${res.body}`);
  return { res, body: (res.body ? safeJson(res.body) : undefined) as T };
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}
