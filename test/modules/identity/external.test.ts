/**
 * External OIDC provider mode (AUTH_ISSUER …): discovery, the code flow against a second,
 * separately started oidc-provider, JWKS verification, roles from AUTH_ROLES_CLAIM, no /idp.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Browser, fetchSend } from '../../helpers/browser.js';
import { startExternalIdp } from '../../helpers/external-idp.js';
import { call, createUser, setupApp } from '../../helpers/app.js';

const REDIRECT = 'http://127.0.0.1:7999/callback';
const AUDIENCE = 'https://api.agent-platform.test';
const ROLES_CLAIM = 'https://agent-platform.test/roles';
const idp = await startExternalIdp({ audience: AUDIENCE, rolesClaim: ROLES_CLAIM, redirectUris: [REDIRECT] });
afterAll(() => idp.close());
const { app } = await setupApp({
  AUTH_ISSUER: idp.issuer,
  AUTH_CLIENT_ID: idp.clientId,
  AUTH_CLIENT_SECRET: idp.clientSecret,
  AUTH_AUDIENCE: AUDIENCE,
  AUTH_ROLES_CLAIM: ROLES_CLAIM,
});
const provider = new URL(idp.issuer).host;

function account(roles: string[] = ['pro']) {
  const id = randomBytes(5).toString('hex');
  return { sub: `ext-${id}`, email: `ext-${id}@example.test`, name: `Ext ${id}`, roles };
}

async function signIn(acc: ReturnType<typeof account>) {
  idp.signInAs(acc);
  const { body: start } = await call(
    app,
    { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(REDIRECT)}` },
    200,
  );
  const back = await new Browser(fetchSend(idp.issuer)).login(start.auth_url, REDIRECT, { email: '', password: '' });
  return { start, back };
}

describe('external OIDC provider', () => {
  it('describes the external provider and does not mount the embedded one', async () => {
    const { body } = await call(app, { method: 'GET', url: '/v1/auth/config' }, 200);
    expect(body).toMatchObject({
      domain: provider,
      clientId: idp.clientId,
      audience: AUDIENCE,
      issuer: idp.issuer,
      authorization_endpoint: `${idp.issuer}/authorize`,
      jwks_uri: `${idp.issuer}/jwks`,
    });
    await call(app, { method: 'GET', url: '/idp/.well-known/openid-configuration' }, 404);
    await call(app, { method: 'GET', url: '/idp/jwks' }, 404);
  });

  it('runs the code flow against the external issuer and provisions the user', async () => {
    const acc = account(['pro']);
    const { start, back } = await signIn(acc);
    const authUrl = new URL(start.auth_url);
    expect(authUrl.origin + authUrl.pathname).toBe(`${idp.issuer}/authorize`);
    expect(authUrl.searchParams.get('audience')).toBe(AUDIENCE);
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');

    const { body: tokens } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/auth/callback',
        payload: {
          code: back.searchParams.get('code'),
          redirect_uri: REDIRECT,
          state: start.state,
          iss: back.searchParams.get('iss'),
        },
      },
      200,
    );
    expect(tokens).toMatchObject({ token_type: 'Bearer', user_id: `${provider}|${acc.sub}` });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const auth = { authorization: `Bearer ${tokens.access_token}` };
    const { body: me } = await call(app, { method: 'GET', url: '/v1/auth/me', headers: auth }, 200);
    expect(me).toMatchObject({ user_id: `${provider}|${acc.sub}`, email: acc.email, name: acc.name });
    expect(me.roles).toContain('pro');
    const { body: v } = await call(app, { method: 'POST', url: '/v1/auth/validate', headers: auth }, 200);
    expect(v).toMatchObject({ valid: true, user_id: `${provider}|${acc.sub}` });
    expect(v.roles).toEqual(expect.arrayContaining(['pro']));

    // the same subject signs in again: the same platform user
    const again = await signIn(acc);
    const { body: t2 } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/auth/callback',
        payload: { code: again.back.searchParams.get('code'), redirect_uri: REDIRECT, state: again.start.state },
      },
      200,
    );
    const { body: me2 } = await call(
      app,
      { method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${t2.access_token}` } },
      200,
    );
    expect(me2.created_at).toBe(me.created_at);

    // refresh at the external token endpoint; the used refresh token is dead afterwards
    const { body: r } = await call(
      app,
      { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: tokens.refresh_token } },
      200,
    );
    expect(r.refresh_token).not.toBe(tokens.refresh_token);
    await call(app, { method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${r.access_token}` } }, 200);
    const { body: replay } = await call(
      app,
      { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: tokens.refresh_token } },
      401,
    );
    expect(replay.code).toBe('invalid_token');
  });

  it('reads roles from AUTH_ROLES_CLAIM; an admin claim passes the admin guard', async () => {
    const admin = account(['admin']);
    const token = await idp.sign({ sub: admin.sub, [ROLES_CLAIM]: ['admin'], email: admin.email });
    const plain = await idp.sign({ sub: account().sub, [ROLES_CLAIM]: ['user'] });
    const target = await createUser(app);
    await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${target.userId}/roles`,
        headers: { authorization: `Bearer ${token}` },
        payload: { roles: ['user', 'pro'] },
      },
      200,
    );
    const { body } = await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${target.userId}/roles`,
        headers: { authorization: `Bearer ${plain}` },
        payload: { roles: ['admin'] },
      },
      403,
    );
    expect(body.code).toBe('insufficient_role');
  });

  it('rejects tokens of the wrong audience, issuer or key, and expired ones', async () => {
    const sub = account().sub;
    const cases: Array<[string, string]> = [
      [await idp.sign({ sub }, { audience: 'https://other.example' }), 'invalid_token'],
      [await idp.sign({ sub }, { issuer: 'http://127.0.0.1:1' }), 'invalid_token'],
      [await idp.sign({ sub }, { expiresIn: -120 }), 'token_expired'],
    ];
    for (const [token, code] of cases) {
      const res = await app.inject({
        method: 'GET',
        url: '/v1/auth/me',
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe(code);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
    }
  });

  it('rejects a replayed state and a bad code', async () => {
    const acc = account();
    const { start, back } = await signIn(acc);
    const { body: bad } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/auth/callback',
        payload: { code: 'not-a-code', redirect_uri: REDIRECT, state: start.state },
      },
      400,
    );
    expect(bad.code).toBe('invalid_grant');
    const { body: replay } = await call(
      app,
      {
        method: 'POST',
        url: '/v1/auth/callback',
        payload: { code: back.searchParams.get('code'), redirect_uri: REDIRECT, state: start.state },
      },
      400,
    );
    expect(replay.code).toBe('invalid_login_state');
  });
});
