/**
 * End to end over real sockets: the server listens on a free loopback port with PUBLIC_URL set to
 * that address, and a client runs the spec's 5-step login through the embedded tenant —
 * GET /v1/auth/login → the tenant's sign-in page → code on the redirect → POST /v1/auth/callback →
 * GET /v1/auth/me — then refreshes the tokens and uses an API key.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { Browser, fetchSend } from '../helpers/browser.js';
import { freePort } from '../helpers/net.js';
import { setupApp } from '../helpers/app.js';

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const { app } = await setupApp({ PUBLIC_URL: base, HOST: '127.0.0.1', PORT: String(port) });
await app.listen({ port, host: '127.0.0.1' });

// The client application's redirect target (a loopback redirect URI, RFC 8252 §7.3).
const received: URLSearchParams[] = [];
const client = http.createServer((req, res) => {
  received.push(new URL(req.url!, 'http://x').searchParams);
  res.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this window.');
});
await new Promise<void>((resolve) => client.listen(0, '127.0.0.1', resolve));
afterAll(() => new Promise<void>((resolve) => client.close(() => resolve())));
const redirectUri = `http://127.0.0.1:${(client.address() as AddressInfo).port}/callback`;

async function api(
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...opts.headers,
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe('5-step login over HTTP', () => {
  it('logs in through the tenant, reads the profile, refreshes, and uses an API key', async () => {
    const email = `e2e-${randomBytes(5).toString('hex')}@example.test`;
    const password = 'e2e password 123';
    const reg = await api('POST', '/auth/register', { body: { email, password, name: 'Eve Two' } });
    expect(reg.status).toBe(201);

    // 1. the client asks for the authorization URL
    const start = await api('GET', `/v1/auth/login?redirect_uri=${encodeURIComponent(redirectUri)}`);
    expect(start.status).toBe(200);
    expect(start.body.auth_url.startsWith(`${base}/idp/authorize?`)).toBe(true);
    expect(start.headers.get('x-request-id')).toBeTruthy();

    // 2–3. the user's browser follows it, signs in, and lands on the redirect URI with a code
    const browser = new Browser(fetchSend(base));
    const back = await browser.login(start.body.auth_url, redirectUri, { email, password });
    expect([...browser.cookies.keys()].some((k) => k.startsWith('ap_idp_session'))).toBe(true);
    const landed = await fetch(back);
    expect(landed.status).toBe(200);
    const params = received.at(-1)!;
    expect(params.get('state')).toBe(start.body.state);
    expect(params.get('code')).toBeTruthy();

    // 4. the client exchanges the code
    const tokens = await api('POST', '/v1/auth/callback', {
      body: { code: params.get('code'), redirect_uri: redirectUri, state: params.get('state') },
    });
    expect(tokens.status).toBe(200);
    expect(tokens.headers.get('cache-control')).toBe('no-store');
    expect(tokens.body).toMatchObject({ token_type: 'Bearer', expires_in: 86400, user_id: reg.body.user_id });
    expect(tokens.body.id_token.split('.')).toHaveLength(3);
    expect(tokens.body.refresh_token).toBeTruthy();

    // 5. the profile
    const me = await api('GET', '/v1/auth/me', { token: tokens.body.access_token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      user_id: reg.body.user_id,
      email,
      name: 'Eve Two',
      roles: ['user'],
      subscription: { tier: 'user', valid_until: null },
    });

    // refresh: new set; the old refresh token is spent
    const refreshed = await api('POST', '/v1/auth/refresh', { body: { refresh_token: tokens.body.refresh_token } });
    expect(refreshed.status).toBe(200);
    expect((await api('GET', '/v1/auth/me', { token: refreshed.body.access_token })).status).toBe(200);
    const replay = await api('POST', '/v1/auth/refresh', { body: { refresh_token: tokens.body.refresh_token } });
    expect(replay.status).toBe(401);
    expect(replay.headers.get('content-type')).toMatch(/^application\/problem\+json/);

    // API key: created with the token, then used on its own
    const key = await api('POST', '/api-keys', { token: refreshed.body.access_token, body: { name: 'e2e' } });
    expect(key.status).toBe(201);
    const viaKey = await api('GET', '/v1/auth/me', { headers: { 'x-api-key': key.body.key } });
    expect(viaKey.body.user_id).toBe(reg.body.user_id);
    const revoke = await api('DELETE', `/api-keys/${key.body.id}`, { token: refreshed.body.access_token });
    expect(revoke.status).toBe(204);
    expect((await api('GET', '/v1/auth/me', { headers: { 'x-api-key': key.body.key } })).status).toBe(401);
  });

  it('replayed state and foreign redirect URIs are refused over HTTP too', async () => {
    const foreign = await api(
      'GET',
      `/v1/auth/login?redirect_uri=${encodeURIComponent('https://attacker.example/cb')}`,
    );
    expect(foreign.status).toBe(400);
    expect(foreign.body.code).toBe('redirect_uri_not_allowed');
    const start = await api('GET', `/v1/auth/login?redirect_uri=${encodeURIComponent(redirectUri)}`);
    const first = await api('POST', '/v1/auth/callback', {
      body: { code: 'bogus', redirect_uri: redirectUri, state: start.body.state },
    });
    expect(first.status).toBe(400);
    const again = await api('POST', '/v1/auth/callback', {
      body: { code: 'bogus', redirect_uri: redirectUri, state: start.body.state },
    });
    expect(again.body.code).toBe('invalid_login_state');
  });

  it('echoes x-request-id from the tenant endpoints and the API', async () => {
    const a = await fetch(`${base}/idp/.well-known/openid-configuration`, { headers: { 'x-request-id': 'e2e-1' } });
    expect(a.headers.get('x-request-id')).toBe('e2e-1');
    expect((await a.json()).issuer).toBe(`${base}/idp`);
    const b = await fetch(`${base}/nope`, { headers: { 'x-request-id': 'e2e-2' } });
    expect(b.status).toBe(404);
    expect(b.headers.get('x-request-id')).toBe('e2e-2');
  });
});
