/** API keys — isolation between users, revocation, expiry, the AUTH_API_KEYS switch. */
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { apiKeys } from '../../../src/db/schema/index.js';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app, ctx } = await setupApp();
const off = await setupApp({ AUTH_API_KEYS: 'off' });

async function keyOf(u: Awaited<ReturnType<typeof createUser>>, name = 'k') {
  return (await call(app, { method: 'POST', url: '/api-keys', headers: u.headers, payload: { name } }, 201)).body as {
    id: string;
    key: string;
  };
}

async function rejected(key: string, how: 'x-api-key' | 'bearer' = 'x-api-key', code = 'invalid_token') {
  const headers = how === 'x-api-key' ? { 'x-api-key': key } : { authorization: `Bearer ${key}` };
  const res = await app.inject({ method: 'GET', url: '/v1/auth/me', headers });
  expect(res.statusCode).toBe(401);
  expect(res.json().code).toBe(code);
  expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
}

describe('api keys — security', () => {
  it("another user's key: not listed, DELETE is 404 and the key keeps working", async () => {
    const alice = await createUser(app);
    const bob = await createUser(app);
    const k = await keyOf(alice);
    const { body: bobs } = await call(app, { method: 'GET', url: '/api-keys', headers: bob.headers }, 200);
    expect(bobs.data).toEqual([]);
    const { body } = await call(app, { method: 'DELETE', url: `/api-keys/${k.id}`, headers: bob.headers }, 404);
    expect(body.code).toBe('not_found');
    await call(app, { method: 'GET', url: '/v1/auth/me', headers: { 'x-api-key': k.key } }, 200);
  });

  it('a revoked key → 401', async () => {
    const u = await createUser(app);
    const k = await keyOf(u);
    await call(app, { method: 'DELETE', url: `/api-keys/${k.id}`, headers: u.headers }, 204);
    await rejected(k.key);
    await rejected(k.key, 'bearer');
  });

  it('an expired key → 401 token_expired (as an expired access token)', async () => {
    const u = await createUser(app);
    const k = await keyOf(u);
    await ctx.db
      .update(apiKeys)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(apiKeys.id, k.id));
    await rejected(k.key, 'x-api-key', 'token_expired');
    await rejected(k.key, 'bearer', 'token_expired');
  });

  it('an unknown or mangled key → 401', async () => {
    const u = await createUser(app);
    const k = await keyOf(u);
    await rejected(`${k.key.slice(0, -1)}${k.key.endsWith('A') ? 'B' : 'A'}`);
    await rejected('apk_unknown');
  });

  it('stores only a hash of the key', async () => {
    const u = await createUser(app);
    const k = await keyOf(u);
    const [row] = await ctx.db.select().from(apiKeys).where(eq(apiKeys.id, k.id));
    expect(JSON.stringify(row)).not.toContain(k.key.slice(12));
    expect(row.keyHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a key cannot manage keys of other users or read them through another route', async () => {
    const alice = await createUser(app);
    const k = await keyOf(alice);
    const { body } = await call(app, { method: 'GET', url: '/api-keys', headers: { 'x-api-key': k.key } }, 200);
    expect(body.data.map((x: { id: string }) => x.id)).toEqual([k.id]);
  });
});

describe('AUTH_API_KEYS=off', () => {
  it('refuses every key with 401, while bearer tokens still work', async () => {
    const u = await createUser(off.app);
    const { body: k } = await call(
      off.app,
      { method: 'POST', url: '/api-keys', headers: u.headers, payload: { name: 'x' } },
      201,
    );
    for (const headers of [{ 'x-api-key': k.key }, { authorization: `Bearer ${k.key}` }]) {
      const res = await off.app.inject({ method: 'GET', url: '/v1/auth/me', headers });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('invalid_token');
    }
    await call(off.app, { method: 'GET', url: '/v1/auth/me', headers: u.headers }, 200);
  });
});
