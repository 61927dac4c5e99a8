/**
 * Identity — attacks: forged, tampered, expired and misdirected tokens; roles; the tenant's
 * sign-in page (escaping, CSRF) and authorization endpoint (redirect URIs, PKCE).
 */
import { SignJWT, base64url } from 'jose';
import { describe, expect, it } from 'vitest';
import { loadKeySet } from '../../../src/modules/identity/keys.js';
import { Browser, injectSend } from '../../helpers/browser.js';
import { call, createUser, setupApp } from '../../helpers/app.js';

const PUBLIC_URL = 'http://localhost:3000';
const { app, ctx, config } = await setupApp({ PUBLIC_URL });
const keys = await loadKeySet(ctx.db);
const REDIRECT = 'http://127.0.0.1:8765/callback';

/** A token like the platform's, with overrides. */
async function forge(sub: string, o: { iss?: string; aud?: string; exp?: number; roles?: string[] } = {}) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ roles: o.roles ?? ['user'] })
    .setProtectedHeader({ alg: 'RS256', kid: keys.signingKid, typ: 'at+jwt' })
    .setIssuer(o.iss ?? `${PUBLIC_URL}/idp`)
    .setAudience(o.aud ?? config.auth.audience)
    .setSubject(sub)
    .setIssuedAt(now - 60)
    .setExpirationTime(o.exp ?? now + 3600)
    .sign(keys.signingKey);
}

async function expect401(token: string, code: 'invalid_token' | 'token_expired', header = `Bearer ${token}`) {
  const res = await app.inject({ method: 'GET', url: '/v1/auth/me', headers: { authorization: header } });
  expect(res.statusCode).toBe(401);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().code).toBe(code);
  expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="agent-platform", error="invalid_token"/);
}

describe('bearer token verification', () => {
  it('accepts a well-formed platform token (control case)', async () => {
    const u = await createUser(app);
    await call(
      app,
      { method: 'GET', url: '/v1/auth/me', headers: { authorization: `Bearer ${await forge(u.userId)}` } },
      200,
    );
  });

  it('expired → 401 token_expired', async () => {
    const u = await createUser(app);
    await expect401(await forge(u.userId, { exp: Math.floor(Date.now() / 1000) - 5 }), 'token_expired');
    // and one issued by /auth/test with expires_in: 1, after it lapsed
    const { body } = await call(app, { method: 'POST', url: '/auth/test', payload: { expires_in: 1 } }, 200);
    await new Promise((r) => setTimeout(r, 1100));
    await expect401(body.access_token, 'token_expired');
  });

  it('tampered signature or payload → 401 invalid_token', async () => {
    const u = await createUser(app);
    const [h, p, s] = (await forge(u.userId)).split('.');
    const flipped = s.slice(0, 10) + (s[10] === 'A' ? 'B' : 'A') + s.slice(11);
    await expect401(`${h}.${p}.${flipped}`, 'invalid_token');
    const payload = JSON.parse(new TextDecoder().decode(base64url.decode(p)));
    const elevated = base64url.encode(JSON.stringify({ ...payload, roles: ['admin'] }));
    await expect401(`${h}.${elevated}.${s}`, 'invalid_token');
  });

  it('wrong audience or issuer → 401 invalid_token', async () => {
    const u = await createUser(app);
    await expect401(await forge(u.userId, { aud: 'https://other-api.example' }), 'invalid_token');
    await expect401(await forge(u.userId, { iss: 'https://evil.example/idp' }), 'invalid_token');
  });

  it('alg none, HS256 with the public key, garbage and non-Bearer schemes → 401 invalid_token', async () => {
    const u = await createUser(app);
    const enc = (o: object) => base64url.encode(JSON.stringify(o));
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: `${PUBLIC_URL}/idp`,
      aud: config.auth.audience,
      sub: u.userId,
      exp: now + 600,
      roles: ['admin'],
    };
    await expect401(`${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims)}.`, 'invalid_token');
    const hs = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: keys.signingKid })
      .sign(new TextEncoder().encode(JSON.stringify(keys.publicJwks.keys[0])));
    await expect401(hs, 'invalid_token');
    await expect401('garbage', 'invalid_token');
    await expect401('a.b.c', 'invalid_token');
    await expect401('x', 'invalid_token', 'Basic dXNlcjpwYXNz');
  });

  it('a token of a user who no longer exists → 401 invalid_token', async () => {
    await expect401(await forge('usr_00000000000000000000000000'), 'invalid_token');
  });

  it('no credentials → 401 unauthenticated with a challenge but no error attribute (RFC 6750 §3.1)', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/auth/me' });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('unauthenticated');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="agent-platform"/);
    expect(res.headers['www-authenticate']).not.toMatch(/error=/);
  });
});

describe('roles', () => {
  it('the admin route needs the admin role (403 insufficient_role otherwise)', async () => {
    const user = await createUser(app);
    const target = await createUser(app);
    for (const roles of [undefined, ['pro'], ['enterprise']]) {
      const caller = roles ? await createUser(app, { roles }) : user;
      const { body } = await call(
        app,
        {
          method: 'PUT',
          url: `/admin/users/${target.userId}/roles`,
          headers: caller.headers,
          payload: { roles: ['admin'] },
        },
        403,
      );
      expect(body.code).toBe('insufficient_role');
    }
    await call(app, { method: 'PUT', url: `/admin/users/${target.userId}/roles`, payload: { roles: ['admin'] } }, 401);
  });

  it('an admin changes roles; the change applies to tokens already issued', async () => {
    const admin = await createUser(app, { roles: ['admin'] });
    const target = await createUser(app);
    const { body } = await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${target.userId}/roles`,
        headers: admin.headers,
        payload: { roles: ['user', 'pro'] },
      },
      200,
    );
    expect(body).toMatchObject({ user_id: target.subject, roles: ['user', 'pro'], subscription: { tier: 'pro' } });
    const { body: me } = await call(app, { method: 'GET', url: '/v1/auth/me', headers: target.headers }, 200);
    expect(me.roles).toEqual(['user', 'pro']);
    // demotion of an admin takes effect at once too
    const other = await createUser(app, { roles: ['admin'] });
    await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${other.userId}/roles`,
        headers: admin.headers,
        payload: { roles: ['user'] },
      },
      200,
    );
    const { body: denied } = await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${target.userId}/roles`,
        headers: other.headers,
        payload: { roles: ['user'] },
      },
      403,
    );
    expect(denied.code).toBe('insufficient_role');
  });

  it('takes the user as the API shows it (user_id, URL-encoded or not) as well as the bare id', async () => {
    const admin = await createUser(app, { roles: ['admin'] });
    const target = await createUser(app);
    expect(target.subject).toBe(`agent-platform|${target.userId}`);
    const { body } = await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${encodeURIComponent(target.subject)}/roles`,
        headers: admin.headers,
        payload: { roles: ['user', 'pro'] },
      },
      200,
    );
    expect(body).toMatchObject({ user_id: target.subject, roles: ['user', 'pro'] });
    await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${target.subject}/roles`,
        headers: admin.headers,
        payload: { roles: ['user'] },
      },
      200,
    );
    await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${target.userId}/roles`,
        headers: admin.headers,
        payload: { roles: ['user', 'enterprise'] },
      },
      200,
    );
    const { body: me } = await call(app, { method: 'GET', url: '/v1/auth/me', headers: target.headers }, 200);
    expect(me.roles).toEqual(['user', 'enterprise']);
    // Another provider's prefix on a platform id names nobody.
    await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${encodeURIComponent(`github|${target.userId}`)}/roles`,
        headers: admin.headers,
        payload: { roles: ['admin'] },
      },
      404,
    );
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const param = doc.paths['/admin/users/{id}/roles'].put.parameters.find((p: { name: string }) => p.name === 'id');
    expect(param.description ?? param.schema.description).toContain('agent-platform%7Cusr_');
  });

  it('validates the role list and the user', async () => {
    const admin = await createUser(app, { roles: ['admin'] });
    const { body } = await call(
      app,
      {
        method: 'PUT',
        url: `/admin/users/${admin.userId}/roles`,
        headers: admin.headers,
        payload: { roles: ['root'] },
      },
      400,
    );
    expect(body.code).toBe('validation_failed');
    await call(
      app,
      {
        method: 'PUT',
        url: '/admin/users/usr_doesnotexist/roles',
        headers: admin.headers,
        payload: { roles: ['user'] },
      },
      404,
    );
  });
});

describe('the tenant sign-in page', () => {
  async function atLoginPage(extra = '') {
    const { body: start } = await call(
      app,
      { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(REDIRECT)}` },
      200,
    );
    const browser = new Browser(injectSend(app));
    const first = await browser.request('GET', start.auth_url + extra);
    expect(first.status).toBe(303);
    const pageUrl = String(first.headers.location);
    const page = await browser.request('GET', pageUrl);
    return { browser, pageUrl, page };
  }

  it('escapes what it echoes (login_hint, submitted email)', async () => {
    const xss = '"><script>alert(1)</script>';
    const { browser, pageUrl, page } = await atLoginPage(`&login_hint=${encodeURIComponent(xss)}`);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(page.body).not.toContain('<script>');
    expect(page.body).toContain('&lt;script&gt;');
    const res = await browser.request('POST', `${pageUrl}/login`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: xss, password: 'nope' }).toString(),
    });
    expect(res.status).toBe(401);
    expect(res.body).toContain('Email or password is wrong');
    expect(res.body).not.toContain('<script>');
  });

  it('refuses a form post without the interaction cookie, or for another interaction (CSRF)', async () => {
    const victim = await atLoginPage();
    const attacker = await atLoginPage();
    const form = { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=a%40b.c&password=x' };
    const noCookie = await app.inject({
      method: 'POST',
      url: `${new URL(victim.pageUrl, PUBLIC_URL).pathname}/login`,
      ...form,
      payload: form.body,
    });
    expect(noCookie.statusCode).toBe(400);
    // the attacker's browser (its own cookie) posting to the victim's interaction
    const cross = await attacker.browser.request('POST', `${victim.pageUrl}/login`, form);
    expect(cross.status).toBe(400);
  });

  it('refuses redirect URIs outside the policy and requests without PKCE at /idp/authorize', async () => {
    const browser = new Browser(injectSend(app));
    const q = (o: Record<string, string>) =>
      new URLSearchParams({
        client_id: config.auth.clientId,
        response_type: 'code',
        scope: 'openid',
        state: 's',
        ...o,
      }).toString();
    const foreign = await browser.request(
      'GET',
      `/idp/authorize?${q({ redirect_uri: 'https://evil.example/cb', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' })}`,
    );
    expect(foreign.status).toBe(400);
    expect(foreign.headers.location).toBeUndefined();
    const noPkce = await browser.request('GET', `/idp/authorize?${q({ redirect_uri: REDIRECT })}`);
    expect(noPkce.status).toBe(303);
    const to = new URL(String(noPkce.headers.location));
    expect(to.searchParams.get('error')).toBe('invalid_request');
    expect(to.searchParams.get('code')).toBeNull();
  });

  it('the cancel button returns access_denied to the client', async () => {
    const { browser, pageUrl } = await atLoginPage();
    const res = await browser.request('POST', `${pageUrl}/abort`);
    expect(res.status).toBe(303);
    const resume = await browser.request('GET', String(res.headers.location));
    const back = new URL(String(resume.headers.location));
    expect(back.href.startsWith(REDIRECT)).toBe(true);
    expect(back.searchParams.get('error')).toBe('access_denied');
  });

  it('sets the provider cookies HttpOnly and SameSite=Lax', async () => {
    const { body: start } = await call(
      app,
      { method: 'GET', url: `/v1/auth/login?redirect_uri=${encodeURIComponent(REDIRECT)}` },
      200,
    );
    const res = await app.inject({
      method: 'GET',
      url: new URL(start.auth_url).pathname + new URL(start.auth_url).search,
    });
    const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
    expect(cookies.length).toBeGreaterThan(0);
    for (const c of cookies) expect(c.toLowerCase()).toMatch(/httponly/);
    for (const c of cookies) expect(c.toLowerCase()).toMatch(/samesite=lax/);
  });
});
