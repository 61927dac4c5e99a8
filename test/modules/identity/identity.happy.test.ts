import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';

// Unique per run: on PostgreSQL, test files share one database.
const tag = randomBytes(4).toString('hex');
const BOSS = `boss-${tag}@example.test`;
const { app } = await setupApp({ ADMIN_EMAILS: BOSS });

describe('identity — happy paths', () => {
  it('registers, logs in, reads and updates the profile', async () => {
    const { body: user } = await call(
      app,
      {
        method: 'POST',
        url: '/auth/register',
        payload: { email: `Ada-${tag}@Example.test`, password: 'correct horse', name: 'Ada' },
      },
      201,
    );
    expect(user.email).toBe(`ada-${tag}@example.test`);
    expect(user.user_id).toMatch(/^agent-platform\|usr_[0-9a-z]{26}$/);
    expect(user.roles).toEqual(['user']);

    const { body: tokens, res } = await call(
      app,
      { method: 'POST', url: '/auth/login', payload: { email: `ada-${tag}@example.test`, password: 'correct horse' } },
      200,
    );
    expect(res.headers['cache-control']).toBe('no-store');
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 86400 });
    expect(tokens.refresh_token).toMatch(/^rt_/);
    const auth = { authorization: `Bearer ${tokens.access_token}` };

    const { body: me } = await call(app, { method: 'GET', url: '/v1/auth/me', headers: auth }, 200);
    expect(me).toMatchObject({
      user_id: user.user_id,
      email: `ada-${tag}@example.test`,
      name: 'Ada',
      roles: ['user'],
      subscription: { tier: 'user' },
    });
    const { body: same } = await call(app, { method: 'GET', url: '/auth/profile', headers: auth }, 200);
    expect(same).toEqual(me);

    const { body: upd } = await call(
      app,
      {
        method: 'PUT',
        url: '/v1/auth/profile',
        headers: auth,
        payload: { name: 'Ada L.', preferences: { theme: 'dark', notifications: false, language: 'en' } },
      },
      200,
    );
    expect(upd.name).toBe('Ada L.');
    expect(upd.preferences).toEqual({ theme: 'dark', notifications: false, language: 'en' });
    const { body: upd2 } = await call(
      app,
      { method: 'PUT', url: '/v1/auth/profile', headers: auth, payload: { preferences: { theme: 'light' } } },
      200,
    );
    expect(upd2.preferences).toEqual({ theme: 'light', notifications: false, language: 'en' });
  });

  it('validates a token and reports identity, roles and expiry', async () => {
    const u = await createUser(app, { roles: ['pro'] });
    const { body } = await call(app, { method: 'POST', url: '/v1/auth/validate', headers: u.headers }, 200);
    expect(body.valid).toBe(true);
    expect(body.user_id).toBe(u.subject);
    expect(body.roles).toEqual(['pro']);
    const exp = new Date(body.expires_at).getTime();
    expect(exp).toBeGreaterThan(Date.now() + 86000 * 1000);
  });

  it('refreshes tokens with rotation', async () => {
    const u = await createUser(app);
    const { body: t2 } = await call(
      app,
      { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: u.refreshToken } },
      200,
    );
    expect(t2.refresh_token).not.toBe(u.refreshToken);
    await call(
      app,
      { method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${t2.access_token}` } },
      200,
    );
    await call(app, { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: t2.refresh_token } }, 200);
  });

  it('gives admin to ADMIN_EMAILS at registration', async () => {
    const { body } = await call(
      app,
      { method: 'POST', url: '/auth/register', payload: { email: BOSS, password: 'longenough' } },
      201,
    );
    expect(body.roles).toContain('admin');
  });

  it('describes the identity provider', async () => {
    const { body } = await call(app, { method: 'GET', url: '/v1/auth/config' }, 200);
    expect(body.scope.split(' ')).toEqual(expect.arrayContaining(['openid', 'profile', 'email']));
    expect(body.clientId).toBeTruthy();
    const { body: info } = await call(app, { method: 'GET', url: '/auth/info' }, 200);
    expect(info).toEqual(body);
  });
});
