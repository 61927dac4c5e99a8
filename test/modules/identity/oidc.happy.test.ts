/** The authorization-code flow through the embedded tenant, over `app.inject` (no sockets). */
import { randomBytes } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import * as oidcClient from 'openid-client';
import { describe, expect, it } from 'vitest';
import { inProcessFetch } from '../../../src/modules/identity/idp.js';
import { userinfoClaims } from '../../../src/modules/identity/userinfo.js';
import { Browser, injectSend } from '../../helpers/browser.js';
import { call, createUser, setupApp } from '../../helpers/app.js';

const PUBLIC_URL = 'http://localhost:3000';
const { app, config } = await setupApp({ PUBLIC_URL });
const REDIRECT = 'http://127.0.0.1:8765/callback';

async function registered() {
  const email = `oidc-${randomBytes(5).toString('hex')}@example.test`;
  const password = 'correct horse battery';
  const { body } = await call(
    app,
    { method: 'POST', url: '/auth/register', payload: { email, password, name: 'Olive' } },
    201,
  );
  return { email, password, profile: body };
}

describe('embedded tenant — authorization code + PKCE', () => {
  it('runs the 5-step login and issues tokens the API accepts', async () => {
    const user = await registered();
    // 1. login start
    const { body: start, res } = await call(
      app,
      { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(REDIRECT)}` },
      200,
    );
    expect(res.headers['cache-control']).toBe('no-store');
    const authUrl = new URL(start.auth_url);
    expect(authUrl.origin + authUrl.pathname).toBe(`${PUBLIC_URL}/idp/authorize`);
    expect(Object.fromEntries(authUrl.searchParams)).toMatchObject({
      client_id: config.auth.clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid profile email offline_access',
      state: start.state,
      code_challenge_method: 'S256',
    });
    expect(authUrl.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);

    // 2–3. the browser signs in at the tenant and comes back with a code
    const browser = new Browser(injectSend(app));
    const back = await browser.login(start.auth_url, REDIRECT, user);
    expect(back.searchParams.get('state')).toBe(start.state);
    expect(back.searchParams.get('iss')).toBe(`${PUBLIC_URL}/idp`);
    const code = back.searchParams.get('code')!;

    // 4. callback
    const { body: tokens } = await call(
      app,
      { method: 'POST', url: '/v1/auth/callback', payload: { code, redirect_uri: REDIRECT, state: start.state } },
      200,
    );
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 86400, user_id: user.profile.user_id });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.refresh_token).not.toMatch(/^rt_/);
    const header = decodeProtectedHeader(tokens.access_token);
    expect(header).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({
      iss: `${PUBLIC_URL}/idp`,
      aud: config.auth.audience,
      sub: user.profile.user_id.split('|')[1],
      roles: ['user'],
      email: user.email,
    });
    expect(claims.exp! - claims.iat!).toBe(86400);
    const idToken = decodeJwt(tokens.id_token);
    expect(idToken).toMatchObject({
      iss: `${PUBLIC_URL}/idp`,
      aud: config.auth.clientId,
      email: user.email,
      name: 'Olive',
    });

    // 5. profile
    const auth = { authorization: `Bearer ${tokens.access_token}` };
    const { body: me } = await call(app, { method: 'GET', url: '/v1/auth/me', headers: auth }, 200);
    expect(me).toMatchObject({ user_id: user.profile.user_id, email: user.email, name: 'Olive', roles: ['user'] });
    const { body: v } = await call(app, { method: 'POST', url: '/v1/auth/validate', headers: auth }, 200);
    expect(v).toMatchObject({ valid: true, user_id: user.profile.user_id, email: user.email, roles: ['user'] });

    // refresh through the provider: new tokens, the old refresh token is spent
    const { body: t2 } = await call(
      app,
      { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: tokens.refresh_token } },
      200,
    );
    expect(t2.token_type).toBe('Bearer');
    expect(t2.expires_in).toBe(86400);
    expect(t2.refresh_token).not.toBe(tokens.refresh_token);
    expect(decodeJwt(t2.access_token).sub).toBe(claims.sub);
    await call(
      app,
      { method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${t2.access_token}` } },
      200,
    );
    const { body: replay } = await call(
      app,
      { method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: tokens.refresh_token } },
      401,
    );
    expect(replay.code).toBe('invalid_token');
  });

  it('skips the password form while the tenant session lasts (second login in the same browser)', async () => {
    const user = await registered();
    const browser = new Browser(injectSend(app));
    const first = await call(
      app,
      { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(REDIRECT)}` },
      200,
    );
    await browser.login(first.body.auth_url, REDIRECT, user);
    const second = await call(
      app,
      { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(REDIRECT)}` },
      200,
    );
    const res = await browser.request('GET', second.body.auth_url);
    expect(res.status).toBe(303);
    const location = new URL(String(res.headers.location));
    expect(location.href.startsWith(REDIRECT)).toBe(true);
    expect(location.searchParams.get('code')).toBeTruthy();
  });

  it('accepts any loopback redirect URI by default (any port and path, RFC 8252 §7.3)', async () => {
    for (const uri of ['http://localhost:51234/cb', 'http://[::1]:9/x?y=1', 'https://127.0.0.1/done']) {
      const { body } = await call(
        app,
        { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(uri)}` },
        200,
      );
      expect(new URL(body.auth_url).searchParams.get('redirect_uri')).toBe(uri);
    }
  });

  it('publishes discovery metadata and the JWKS of the platform keys', async () => {
    const { body: meta } = await call(app, { method: 'GET', url: '/idp/.well-known/openid-configuration' }, 200);
    expect(meta).toMatchObject({
      issuer: `${PUBLIC_URL}/idp`,
      authorization_endpoint: `${PUBLIC_URL}/idp/authorize`,
      token_endpoint: `${PUBLIC_URL}/idp/token`,
      jwks_uri: `${PUBLIC_URL}/idp/jwks`,
      code_challenge_methods_supported: ['S256'],
    });
    const { body: jwks } = await call(app, { method: 'GET', url: '/idp/jwks' }, 200);
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwks.keys[0].d).toBeUndefined();
    const { body: cfg } = await call(app, { method: 'GET', url: '/v1/auth/config' }, 200);
    expect(cfg).toMatchObject({
      domain: 'localhost:3000',
      clientId: config.auth.clientId,
      audience: config.auth.audience,
      authorization_endpoint: `${PUBLIC_URL}/idp/authorize`,
    });
  });
});

describe('embedded tenant — UserInfo endpoint (OIDC Core §5.3)', () => {
  it('is advertised in discovery and answers a standard OIDC client (openid-client) with the profile', async () => {
    const user = await registered();
    const fetchInProcess = inProcessFetch(app) as never;
    const client = await oidcClient.discovery(
      new URL(`${PUBLIC_URL}/idp`),
      config.auth.clientId,
      undefined,
      oidcClient.None(),
      {
        execute: [oidcClient.allowInsecureRequests],
        [oidcClient.customFetch]: fetchInProcess,
      },
    );
    expect(client.serverMetadata().userinfo_endpoint).toBe(`${PUBLIC_URL}/idp/userinfo`);
    client[oidcClient.customFetch] = fetchInProcess;

    const verifier = oidcClient.randomPKCECodeVerifier();
    const state = oidcClient.randomState();
    const authUrl = oidcClient.buildAuthorizationUrl(client, {
      redirect_uri: REDIRECT,
      scope: 'openid profile email',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const back = await new Browser(injectSend(app)).login(authUrl.href, REDIRECT, user);
    const tokens = await oidcClient.authorizationCodeGrant(client, back, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    const sub = tokens.claims()!.sub;
    const info = await oidcClient.fetchUserInfo(client, tokens.access_token, sub);
    expect(info).toMatchObject({ sub, email: user.email, email_verified: false, name: 'Olive' });
    expect(info.updated_at).toEqual(expect.any(Number));
    // POST with the token in a form body (RFC 6750 §2.2) answers the same
    const post = await app.inject({
      method: 'POST',
      url: '/idp/userinfo',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `access_token=${tokens.access_token}`,
    });
    expect(post.statusCode).toBe(200);
    expect(post.headers['cache-control']).toBe('no-store');
    expect(post.json()).toEqual(info);
  });

  it('takes the platform tokens too, and refuses a missing, malformed or foreign token with a Bearer challenge', async () => {
    const user = await createUser(app);
    const { body } = await call(app, { method: 'GET', url: '/idp/userinfo', headers: user.headers }, 200);
    expect(body).toMatchObject({ sub: user.userId, email: user.email });

    const none = await app.inject({ method: 'GET', url: '/idp/userinfo' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer /);
    const forged = await app.inject({
      method: 'GET',
      url: '/idp/userinfo',
      headers: { authorization: `Bearer ${user.token.slice(0, -4)}AAAA` },
    });
    expect(forged.statusCode).toBe(401);
    expect(forged.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    const both = await app.inject({
      method: 'POST',
      url: '/idp/userinfo',
      headers: { ...user.headers, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `access_token=${user.token}`,
    });
    expect(both.statusCode).toBe(400);
  });

  it('releases the claims of the scopes the token carries, and no claim without a value', () => {
    const u = {
      id: 'usr_1',
      email: 'a@example.test',
      name: null,
      picture: null,
      updatedAt: new Date(1_700_000_000_000),
    };
    expect(userinfoClaims(u, 'openid')).toEqual({ sub: 'usr_1' });
    expect(userinfoClaims(u, 'openid email')).toEqual({ sub: 'usr_1', email: 'a@example.test', email_verified: false });
    expect(userinfoClaims(u, 'openid profile')).toEqual({ sub: 'usr_1', updated_at: 1_700_000_000 });
  });
});
