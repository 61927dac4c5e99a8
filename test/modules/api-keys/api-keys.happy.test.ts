/** API keys — create, list, use (X-API-Key and Bearer), revoke. */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app } = await setupApp();

describe('api keys — happy paths', () => {
  it('creates a key shown once, lists it without the secret, and authenticates with it', async () => {
    const u = await createUser(app);
    const { body: created, res } = await call(
      app,
      { method: 'POST', url: '/api-keys', headers: u.headers, payload: { name: 'laptop' } },
      201,
    );
    expect(res.headers['cache-control']).toBe('no-store');
    expect(created.key).toMatch(/^apk_[\w-]{43}$/);
    expect(created).toMatchObject({
      name: 'laptop',
      prefix: created.key.slice(0, 12),
      last_used_at: null,
      expires_at: null,
    });
    expect(created.id).toMatch(/^key_/);

    const { body: list } = await call(app, { method: 'GET', url: '/api-keys', headers: u.headers }, 200);
    expect(list.data).toHaveLength(1);
    const defaults = [
      'memory:read',
      'memory:write',
      'permissions:manage',
      'tools:execute',
      'agents:manage',
      'api_keys:manage',
    ]; // every scope but approvals:decide and policies:manage, which a key gets only by name (ADR 0973)
    expect(list.data[0]).toEqual({
      id: created.id,
      name: 'laptop',
      prefix: created.prefix,
      scopes: defaults,
      last_used_at: null,
      expires_at: null,
      created_at: created.created_at,
    });
    expect(JSON.stringify(list)).not.toContain(created.key);

    const { body: viaHeader } = await call(
      app,
      { method: 'GET', url: '/v1/auth/me', headers: { 'x-api-key': created.key } },
      200,
    );
    expect(viaHeader.user_id).toBe(u.subject);
    const { body: viaBearer } = await call(
      app,
      { method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${created.key}` } },
      200,
    );
    expect(viaBearer.user_id).toBe(u.subject);
    const { body: v } = await call(
      app,
      { method: 'POST', url: '/v1/auth/validate', headers: { 'x-api-key': created.key } },
      200,
    );
    expect(v).toMatchObject({ valid: true, user_id: u.subject });

    const { body: after } = await call(app, { method: 'GET', url: '/api-keys', headers: u.headers }, 200);
    expect(Date.parse(after.data[0].last_used_at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('revokes a key (204) and drops it from the list', async () => {
    const u = await createUser(app);
    const { body: k } = await call(
      app,
      {
        method: 'POST',
        url: '/api-keys',
        headers: u.headers,
        payload: { name: 'ci', expires_at: new Date(Date.now() + 86400_000).toISOString() },
      },
      201,
    );
    expect(Date.parse(k.expires_at)).toBeGreaterThan(Date.now());
    await call(app, { method: 'DELETE', url: `/api-keys/${k.id}`, headers: u.headers }, 204);
    const { body: list } = await call(app, { method: 'GET', url: '/api-keys', headers: u.headers }, 200);
    expect(list.data).toEqual([]);
  });

  it('pages through keys newest first', async () => {
    const u = await createUser(app);
    for (const name of ['a', 'b', 'c'])
      await call(app, { method: 'POST', url: '/api-keys', headers: u.headers, payload: { name } }, 201);
    const { body: p1 } = await call(app, { method: 'GET', url: '/api-keys?limit=2', headers: u.headers }, 200);
    expect(p1.data.map((k: { name: string }) => k.name)).toEqual(['c', 'b']);
    expect(p1.next_cursor).toEqual(expect.any(String));
    const { body: p2 } = await call(
      app,
      { method: 'GET', url: `/api-keys?limit=2&cursor=${encodeURIComponent(p1.next_cursor)}`, headers: u.headers },
      200,
    );
    expect(p2.data.map((k: { name: string }) => k.name)).toEqual(['a']);
    expect(p2.next_cursor).toBeNull();
  });
});
