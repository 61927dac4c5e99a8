/** Identity — wrong input and wrong sequence: every rule answers with its own status and code. */
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { execRows } from '../../../src/db/client.js';
import { Browser, injectSend } from '../../helpers/browser.js';
import { loadConfig } from '../../../src/config.js';
import { call, createUser, setupApp, testEnv } from '../../helpers/app.js';

const { app, ctx } = await setupApp({ PUBLIC_URL: 'http://localhost:3000' });
const LISTED = 'https://console.example.test/callback';
const [prod, strict] = await Promise.all([
  setupApp({ NODE_ENV: 'production', AUTH_TEST_TOKENS: undefined, AUTH_TEST_ROLES: undefined }),
  setupApp({ AUTH_REDIRECT_URIS: LISTED }),
]);
const REDIRECT = 'http://127.0.0.1:8765/callback';
const email = () => `err-${randomBytes(5).toString('hex')}@example.test`;

async function loginStart(redirect = REDIRECT) {
  return (await call(app, { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(redirect)}` }, 200))
    .body;
}

async function codeFor(start: { auth_url: string }, redirect = REDIRECT) {
  const creds = { email: email(), password: 'long enough pw' };
  await call(app, { method: 'POST', url: '/auth/register', payload: creds }, 201);
  const back = await new Browser(injectSend(app)).login(start.auth_url, redirect, creds);
  return back.searchParams.get('code')!;
}

describe('registration and simplified login', () => {
  it('refuses a duplicate email (any case) with 409', async () => {
    const e = email();
    await call(app, { method: 'POST', url: '/auth/register', payload: { email: e, password: 'long enough' } }, 201);
    const { body } = await call(
      app,
      { method: 'POST', url: '/auth/register', payload: { email: e.toUpperCase(), password: 'long enough' } },
      409,
    );
    expect(body).toMatchObject({ status: 409, code: 'conflict' });
  });

  it('answers a wrong password and an unknown email identically', async () => {
    const e = email();
    await call(app, { method: 'POST', url: '/auth/register', payload: { email: e, password: 'right password' } }, 201);
    const wrong = await app.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { email: e, password: 'wrong password' },
    });
    const unknown = await app.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { email: email(), password: 'wrong password' },
    });
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    const strip = (b: Record<string, unknown>) => ({ ...b, request_id: undefined });
    expect(strip(wrong.json())).toEqual(strip(unknown.json()));
    expect(wrong.json().code).toBe('invalid_credentials');
    expect(wrong.headers['www-authenticate']).toBe(unknown.headers['www-authenticate']);
  });

  it.each([
    ['a short password', { email: 'a@example.test', password: 'short' }, '/password'],
    ['a missing field', { password: 'long enough' }, '/email'],
    ['an unknown field', { email: 'a@example.test', password: 'long enough', admin: true }, '/admin'],
    ['a wrong type', { email: 'a@example.test', password: 'long enough', name: 42 }, '/name'],
    ['a malformed email', { email: 'not-an-email', password: 'long enough' }, '/email'],
  ])('rejects %s with 400 validation_failed and a pointer', async (_what, payload, pointer) => {
    const { body, res } = await call(app, { method: 'POST', url: '/auth/register', payload }, 400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(body.code).toBe('validation_failed');
    expect(body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    expect(body.errors[0].in).toBe('body');
  });

  it('rejects malformed JSON with 400 validation_failed', async () => {
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/auth/login',
        headers: { 'content-type': 'application/json' },
        payload: '{"email": "a@b.c",',
      },
      400,
    );
    expect(body).toMatchObject({ code: 'validation_failed', errors: [{ in: 'body', pointer: '/' }] });
  });
});

describe('GET /v1/auth/login', () => {
  it('needs redirect_uri', async () => {
    const { body } = await call(app, { method: 'GET', url: '/v1/auth/login' }, 400);
    expect(body.code).toBe('validation_failed');
    expect(body.errors[0]).toMatchObject({ in: 'querystring', pointer: '/redirect_uri' });
  });

  it.each([
    'https://evil.example/callback',
    'http://10.0.0.1/cb',
    'javascript:alert(1)',
    'http://127.0.0.1/cb#frag',
    'http://user:pw@127.0.0.1/cb',
    'not a url',
  ])('refuses the foreign or unsafe redirect_uri %s', async (uri) => {
    const { body } = await call(
      app,
      { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(uri)}` },
      400,
    );
    expect(body.code).toBe('redirect_uri_not_allowed');
  });
});

describe('POST /v1/auth/callback', () => {
  it('refuses an unknown state', async () => {
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/auth/callback',
        payload: { code: 'x', redirect_uri: REDIRECT, state: 'never-issued' },
      },
      400,
    );
    expect(body.code).toBe('invalid_login_state');
  });

  it('refuses a replayed state, even with a valid code', async () => {
    const start = await loginStart();
    const code = await codeFor(start);
    await call(
      app,
      { method: 'POST', url: '/v1/auth/callback', payload: { code, redirect_uri: REDIRECT, state: start.state } },
      200,
    );
    const { body } = await call(
      app,
      { method: 'POST', url: '/v1/auth/callback', payload: { code, redirect_uri: REDIRECT, state: start.state } },
      400,
    );
    expect(body.code).toBe('invalid_login_state');
  });

  it('refuses a redirect_uri other than the one the state was issued for', async () => {
    const start = await loginStart();
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/auth/callback',
        payload: { code: 'x', redirect_uri: 'http://127.0.0.1:9999/other', state: start.state },
      },
      400,
    );
    expect(body.code).toBe('redirect_uri_mismatch');
    expect(body.errors[0].pointer).toBe('/redirect_uri');
  });

  it('refuses an expired state (10 minutes)', async () => {
    const start = await loginStart();
    const hash = createHash('sha256').update(start.state).digest('hex');
    await execRows(
      ctx.db,
      sql`update login_states set expires_at = now() - interval '1 second' where state_hash = ${hash}`,
    );
    const { body } = await call(
      app,
      { method: 'POST', url: '/v1/auth/callback', payload: { code: 'x', redirect_uri: REDIRECT, state: start.state } },
      400,
    );
    expect(body).toMatchObject({ code: 'invalid_login_state' });
    expect(body.detail).toMatch(/expired/);
  });

  it('maps a bad or reused authorization code to 400 invalid_grant (RFC 6749 §5.2)', async () => {
    const bad = await loginStart();
    const { body } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/auth/callback',
        payload: { code: 'forged-code', redirect_uri: REDIRECT, state: bad.state },
      },
      400,
    );
    expect(body.code).toBe('invalid_grant');

    // a real code is single use: a second login state cannot redeem it again
    const first = await loginStart();
    const code = await codeFor(first);
    await call(
      app,
      { method: 'POST', url: '/v1/auth/callback', payload: { code, redirect_uri: REDIRECT, state: first.state } },
      200,
    );
    const other = await loginStart();
    const { body: reused } = await call(
      app,
      { method: 'POST', url: '/v1/auth/callback', payload: { code, redirect_uri: REDIRECT, state: other.state } },
      400,
    );
    expect(reused.code).toBe('invalid_grant');
  });

  it('refuses a code redeemed with another login state (PKCE verifier does not match)', async () => {
    const a = await loginStart();
    const b = await loginStart();
    const code = await codeFor(a);
    const { body } = await call(
      app,
      { method: 'POST', url: '/v1/auth/callback', payload: { code, redirect_uri: REDIRECT, state: b.state } },
      400,
    );
    expect(body.code).toBe('invalid_grant');
  });

  it('validates the body', async () => {
    const { body } = await call(
      app,
      { method: 'POST', url: '/v1/auth/callback', payload: { code: 'x', redirect_uri: REDIRECT } },
      400,
    );
    expect(body.errors.map((e: { pointer: string }) => e.pointer)).toContain('/state');
  });
});

describe('POST /v1/auth/refresh', () => {
  it('refuses unknown refresh tokens of both kinds with 401', async () => {
    for (const token of ['rt_unknown', 'provider-refresh-token-that-does-not-exist']) {
      const { body, res } = await call(
        app,
        { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: token } },
        401,
      );
      expect(body.code).toBe('invalid_token');
      expect(res.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    }
  });

  it('refuses a used platform refresh token and then revokes its family', async () => {
    const u = await createUser(app);
    const { body: t2 } = await call(
      app,
      { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: u.refreshToken } },
      200,
    );
    await call(app, { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: u.refreshToken } }, 401);
    // reuse detected: the newer token of the same family is dead too (OAuth 2.0 Security BCP §4.14.2)
    await call(app, { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: t2.refresh_token } }, 401);
  });
});

describe('POST /v1/auth/validate', () => {
  it('reports an invalid token as valid:false with the reason', async () => {
    const { body } = await call(
      app,
      { method: 'POST', url: '/v1/auth/validate', headers: { authorization: 'Bearer garbage' } },
      200,
    );
    expect(body).toEqual({ valid: false, code: 'invalid_token' });
  });

  it('needs a token', async () => {
    const { body } = await call(app, { method: 'POST', url: '/v1/auth/validate' }, 401);
    expect(body.code).toBe('unauthenticated');
  });
});

describe('/auth/test outside development', () => {
  it('is 404 when NODE_ENV=production', async () => {
    const { body } = await call(prod.app, { method: 'POST', url: '/auth/test', payload: {} }, 404);
    expect(body.code).toBe('not_found');
  });

  it('AUTH_TEST_TOKENS=on in production is refused at start (anyone could mint accounts)', () => {
    expect(() =>
      loadConfig(testEnv({ NODE_ENV: 'production', AUTH_TEST_TOKENS: 'on', AUTH_TEST_ROLES: undefined })),
    ).toThrow(/AUTH_TEST_TOKENS must be off with NODE_ENV=production/);
  });
});

describe('AUTH_REDIRECT_URIS', () => {
  it('admits only the listed URIs (loopback included)', async () => {
    await call(strict.app, { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(LISTED)}` }, 200);
    const { body } = await call(
      strict.app,
      { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(REDIRECT)}` },
      400,
    );
    expect(body.code).toBe('redirect_uri_not_allowed');
  });

  it('admits the web console’s connected-accounts page as a connection return_to besides the list', async () => {
    const user = await createUser(strict.app);
    const connect = (return_to: string, status: number) =>
      call(
        strict.app,
        {
          method: 'POST',
          url: '/connections',
          headers: user.headers,
          payload: { service: 'no-such-service', return_to },
        },
        status,
      ).then((r) => r.body);
    // Past the return_to check, the unknown service is what fails.
    expect((await connect(`${strict.config.publicUrl}/console/connections`, 404)).code).toBe('not_found');
    expect((await connect(`${strict.config.publicUrl}/console/elsewhere`, 400)).errors[0].pointer).toBe('/return_to');
  });
});
