/**
 * Rate limits per principal and role (RATE_LIMIT_USER / RATE_LIMIT_PRO per window; enterprise and
 * admin unlimited; anonymous callers per IP). Runs on Redis when TEST_REDIS_URL is set.
 */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app } = await setupApp({ RATE_LIMIT_USER: '3', RATE_LIMIT_PRO: '5', RATE_LIMIT_ANONYMOUS: '10' });

async function burst(n: number, headers: Record<string, string>, remoteAddress?: string, url = '/v1/auth/me') {
  const out = [];
  for (let i = 0; i < n; i++)
    out.push(await app.inject({ method: 'GET', url, headers, ...(remoteAddress ? { remoteAddress } : {}) }));
  return out;
}

describe('rate limits', () => {
  // createUser() spends one request of the new user's budget (GET /v1/auth/me).
  it('limits a user to RATE_LIMIT_USER per window: 429 rate_limited with Retry-After and RateLimit-*', async () => {
    const u = await createUser(app);
    const res = await burst(3, u.headers);
    expect(res.slice(0, 2).map((r) => r.statusCode)).toEqual([200, 200]);
    expect(res[0].headers['ratelimit-limit']).toBe('3');
    expect(res[0].headers['ratelimit-remaining']).toBe('1');
    const limited = res[2];
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(limited.json().code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(limited.headers['ratelimit-limit']).toBe('3');
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect(Number(limited.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(0);
  });

  it('counts per account: another user is unaffected; token and API key share one bucket', async () => {
    const a = await createUser(app);
    const b = await createUser(app);
    const { body: key } = await call(
      app,
      { method: 'POST', url: '/api-keys', headers: a.headers, payload: { name: 'k' } },
      201,
    );
    const viaKey = await burst(1, { 'x-api-key': key.key });
    const viaToken = await burst(1, a.headers);
    expect([viaKey[0].statusCode, viaToken[0].statusCode]).toEqual([200, 429]);
    expect((await burst(1, b.headers))[0].statusCode).toBe(200);
  });

  it('gives pro users RATE_LIMIT_PRO', async () => {
    const p = await createUser(app, { roles: ['pro'] });
    const res = await burst(5, p.headers);
    expect(res.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 429]);
  });

  it('does not limit enterprise and admin', async () => {
    for (const roles of [['enterprise'], ['admin']]) {
      const u = await createUser(app, { roles });
      const res = await burst(12, u.headers);
      expect(res.every((r) => r.statusCode === 200)).toBe(true);
    }
  });

  it('limits anonymous callers (public routes) per IP address', async () => {
    const res = await burst(11, {}, '10.20.30.40', '/v1/auth/config');
    expect(res.slice(0, 10).every((r) => r.statusCode === 200)).toBe(true);
    expect(res[10].statusCode).toBe(429);
    expect((await burst(1, {}, '10.20.30.41', '/v1/auth/config'))[0].statusCode).toBe(200);
  });

  // A GET's HEAD twin is a route of its own: each request counts once, in the same bucket.
  it('counts a HEAD request once, in the same bucket as GET', async () => {
    const p = await createUser(app, { roles: ['pro'] });
    const get = await app.inject({ method: 'GET', url: '/v1/auth/me', headers: p.headers });
    const head = await app.inject({ method: 'HEAD', url: '/v1/auth/me', headers: p.headers });
    expect([get.statusCode, head.statusCode]).toEqual([200, 200]);
    expect(Number(get.headers['ratelimit-remaining']) - Number(head.headers['ratelimit-remaining'])).toBe(1);
    expect(head.headers['ratelimit-limit']).toBe('5');
  });
});
