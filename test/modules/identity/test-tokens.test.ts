/**
 * `POST /auth/test` (issue 11 §1): test tokens are issued only for accounts the route created,
 * elevated roles need two switches, and the default exposure follows NODE_ENV and the listen address.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { call, setupApp } from '../../helpers/app.js';

const email = () => `tt-${randomBytes(5).toString('hex')}@example.test`;
// Test tokens on (NODE_ENV=test default), elevated roles off.
const plain = await setupApp({
  AUTH_TEST_TOKENS: undefined,
  AUTH_TEST_ROLES: undefined,
  ADMIN_EMAILS: 'boss@example.test',
});
const elevated = await setupApp();

const me = async (app: typeof plain.app, token: string) =>
  (await call(app, { method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${token}` } }, 200)).body;

describe('happy: test accounts', () => {
  it('creates a test account, marks it test: true, and reuses it for the same email', async () => {
    const e = email();
    const first = (await call(plain.app, { method: 'POST', url: '/auth/test', payload: { email: e } }, 200)).body;
    const profile = await me(plain.app, first.access_token);
    expect(profile).toMatchObject({ email: e, roles: ['user'], test: true });
    const again = (
      await call(plain.app, { method: 'POST', url: '/auth/test', payload: { email: e.toUpperCase() } }, 200)
    ).body;
    expect((await me(plain.app, again.access_token)).user_id).toBe(profile.user_id);
  });

  it('registered accounts read test: false', async () => {
    const e = email();
    await call(
      plain.app,
      { method: 'POST', url: '/auth/register', payload: { email: e, password: 'a long passphrase 1' } },
      201,
    );
    const t = (
      await call(
        plain.app,
        { method: 'POST', url: '/auth/login', payload: { email: e, password: 'a long passphrase 1' } },
        200,
      )
    ).body;
    expect((await me(plain.app, t.access_token)).test).toBe(false);
  });

  it('grants pro/enterprise/admin with AUTH_TEST_TOKENS=on and AUTH_TEST_ROLES=on', async () => {
    const t = (await call(elevated.app, { method: 'POST', url: '/auth/test', payload: { roles: ['admin'] } }, 200))
      .body;
    expect((await me(elevated.app, t.access_token)).roles).toEqual(['admin']);
  });
});

describe('error: what the route refuses', () => {
  it('elevated roles without AUTH_TEST_ROLES → 403 forbidden; role user is fine', async () => {
    for (const role of ['pro', 'enterprise', 'admin']) {
      const { body } = await call(plain.app, { method: 'POST', url: '/auth/test', payload: { roles: [role] } }, 403);
      expect(body.code).toBe('forbidden');
    }
    await call(plain.app, { method: 'POST', url: '/auth/test', payload: { roles: ['user'] } }, 200);
  });

  it('AUTH_TEST_ROLES=on without AUTH_TEST_TOKENS=on is a configuration error', () => {
    expect(() => loadConfig({ NODE_ENV: 'test', AUTH_TEST_ROLES: 'on' })).toThrow(/AUTH_TEST_ROLES/);
    expect(loadConfig({ NODE_ENV: 'test', AUTH_TEST_TOKENS: 'on', AUTH_TEST_ROLES: 'on' }).auth.testRoles).toBe(true);
  });
});

describe('security: a test token never acts as a real account', () => {
  it('the email of a registered account → 409 conflict, and no token, even with elevated roles enabled', async () => {
    for (const { app } of [plain, elevated]) {
      const e = email();
      await call(
        app,
        { method: 'POST', url: '/auth/register', payload: { email: e, password: 'victim passphrase' } },
        201,
      );
      for (const payload of [{ email: e }, { email: e.toUpperCase() }, { email: e, roles: ['user'] }]) {
        const res = await app.inject({ method: 'POST', url: '/auth/test', payload });
        expect(res.statusCode).toBe(409);
        expect(res.json().code).toBe('conflict');
        expect(res.body).not.toContain('access_token');
      }
    }
    // The victim's roles were not touched by an attempt that asked for admin.
    const e = email();
    await call(
      elevated.app,
      { method: 'POST', url: '/auth/register', payload: { email: e, password: 'victim passphrase' } },
      201,
    );
    await call(elevated.app, { method: 'POST', url: '/auth/test', payload: { email: e, roles: ['admin'] } }, 409);
    const t = (
      await call(
        elevated.app,
        { method: 'POST', url: '/auth/login', payload: { email: e, password: 'victim passphrase' } },
        200,
      )
    ).body;
    expect((await me(elevated.app, t.access_token)).roles).toEqual(['user']);
  });

  it('an ADMIN_EMAILS address cannot be claimed as a test account (it would squat the admin)', async () => {
    const { body } = await call(
      plain.app,
      { method: 'POST', url: '/auth/test', payload: { email: 'boss@example.test' } },
      409,
    );
    expect(body.code).toBe('conflict');
    await call(
      plain.app,
      { method: 'POST', url: '/auth/register', payload: { email: 'boss@example.test', password: 'the real admin' } },
      201,
    );
  });

  it('a test account cannot be taken over by registering its email', async () => {
    const e = email();
    await call(plain.app, { method: 'POST', url: '/auth/test', payload: { email: e } }, 200);
    await call(
      plain.app,
      { method: 'POST', url: '/auth/register', payload: { email: e, password: 'a long passphrase' } },
      409,
    );
  });
});

describe('default exposure', () => {
  it('development listens on 127.0.0.1 unless HOST is set; production and test on 0.0.0.0', () => {
    expect(loadConfig({ NODE_ENV: 'development' }).host).toBe('127.0.0.1');
    expect(loadConfig({ NODE_ENV: 'development', HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadConfig({ NODE_ENV: 'production' }).host).toBe('0.0.0.0');
  });

  it('is on by default in test and on a loopback-only development listener, off otherwise', () => {
    const on = (env: Record<string, string>) => loadConfig(env).auth.testTokens;
    expect(on({ NODE_ENV: 'test' })).toBe(true);
    expect(on({ NODE_ENV: 'development' })).toBe(true);
    expect(on({ NODE_ENV: 'development', HOST: '::1' })).toBe(true);
    expect(on({ NODE_ENV: 'development', HOST: 'localhost' })).toBe(true);
    expect(on({ NODE_ENV: 'development', HOST: '0.0.0.0' })).toBe(false);
    expect(on({ NODE_ENV: 'development', HOST: '192.168.1.10' })).toBe(false);
    expect(on({ NODE_ENV: 'production' })).toBe(false);
    expect(on({ NODE_ENV: 'production', HOST: '127.0.0.1' })).toBe(false);
    expect(on({ NODE_ENV: 'development', HOST: '127.0.0.1', AUTH_TEST_TOKENS: 'off' })).toBe(false);
  });

  it('explicitly on where other hosts reach it → a start-up warning; in production → refused at start', async () => {
    expect(
      loadConfig({ NODE_ENV: 'development', HOST: '0.0.0.0', AUTH_TEST_TOKENS: 'on' }).auth.testTokensWarning,
    ).toMatch(/listening on 0\.0\.0\.0/);
    expect(() => loadConfig({ NODE_ENV: 'production', HOST: '127.0.0.1', AUTH_TEST_TOKENS: 'on' })).toThrow(
      /AUTH_TEST_TOKENS/,
    );
    expect(loadConfig({ NODE_ENV: 'development' }).auth.testTokensWarning).toBeUndefined();
    expect(loadConfig({ NODE_ENV: 'test', HOST: '0.0.0.0' }).auth.testTokensWarning).toBeUndefined();
  });
});
