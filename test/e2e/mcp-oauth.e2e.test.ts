/**
 * MCP authorization end to end: the SDK's own client, with no token configured, against the
 * embedded tenant — 401 → protected resource metadata (RFC 9728) → authorization server metadata
 * (RFC 8414) → dynamic client registration (RFC 7591) → authorization code with PKCE S256 and the
 * /mcp resource indicator (RFC 8707), sign-in form and consent filled by the test → token → tools.
 * Plus the registration policy (public clients, https/loopback redirect URIs, rate limit).
 */
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { setupApp } from '../helpers/app.js';
import { Browser, fetchSend } from '../helpers/browser.js';
import { freePort } from '../helpers/net.js';

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const { app, ctx } = await setupApp({
  PUBLIC_URL: base,
  HOST: '127.0.0.1',
  PORT: String(port),
  MCP_REGISTRATIONS_PER_HOUR: '6',
});
await app.listen({ port, host: '127.0.0.1' });

const redirectUri = `http://127.0.0.1:${await freePort()}/oauth/callback`;

/** An MCP client application's OAuth state, in memory. */
class MemoryOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier?: string;
  authorizationUrl?: URL;
  readonly redirectUrl = redirectUri;
  readonly clientMetadata = {
    client_name: 'Vitest Desktop',
    // The 1.x SDK does not derive it (2.x does, SEP-837); /idp/reg requires it.
    application_type: 'native',
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  } as OAuthClientMetadata;
  clientInformation() {
    return this.client;
  }
  saveClientInformation(c: OAuthClientInformationMixed) {
    this.client = c;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error('no verifier');
    return this.verifier;
  }
}

async function register(body: Record<string, unknown>) {
  const res = await fetch(`${base}/idp/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ application_type: 'native', ...body }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function signUp() {
  const email = `mcp-${randomBytes(5).toString('hex')}@example.test`;
  const password = 'mcp password 123';
  const res = await fetch(`${base}/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  expect(res.status).toBe(201);
  return { email, password };
}

describe(`MCP OAuth against /idp (${ctx.database.engine})`, () => {
  it('signs an SDK client in by itself and then serves its tools', async () => {
    const creds = await signUp();
    const auth = new MemoryOAuthProvider();
    const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: auth });
    await expect(new Client({ name: 'vitest-oauth', version: '1' }).connect(first)).rejects.toBeInstanceOf(
      UnauthorizedError,
    );

    // The SDK discovered the server, registered itself and built the authorization URL.
    expect(auth.client?.client_id).toBeTruthy();
    expect('client_secret' in auth.client! && auth.client.client_secret).toBeFalsy();
    const url = auth.authorizationUrl!;
    expect(url.href.startsWith(`${base}/idp/authorize?`)).toBe(true);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('resource')).toBe(`${base}/mcp`);

    // The user signs in and allows the client.
    const browser = new Browser(fetchSend(base));
    const back = await browser.login(url.href, redirectUri, creds);
    expect(back.searchParams.get('error'), back.href).toBeNull();
    expect(back.searchParams.get('state')).toBe(url.searchParams.get('state'));
    await first.finishAuth(back.searchParams.get('code')!);

    const token = auth.saved!.access_token;
    const claims = decodeJwt(token);
    expect(claims.aud).toBe(`${base}/mcp`);
    expect(claims.iss).toBe(`${base}/idp`);
    expect(auth.saved!.refresh_token).toBeTruthy();

    const client = new Client({ name: 'vitest-oauth', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: auth }));
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('search_tools');
    const stored = await client.callTool({ name: 'remember', arguments: { content: 'signed in through OAuth' } });
    expect(stored.isError).toBeFalsy();
    await client.close();

    // Audience binding: a token for /mcp is not a token for the REST API.
    const rest = await fetch(`${base}/v1/auth/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(rest.status).toBe(401);
  });

  it('publishes RFC 8414 metadata with registration and PKCE S256', async () => {
    const res = await fetch(`${base}/.well-known/oauth-authorization-server/idp`);
    expect(res.status).toBe(200);
    const m = (await res.json()) as Record<string, any>;
    expect(m).toMatchObject({
      issuer: `${base}/idp`,
      registration_endpoint: `${base}/idp/reg`,
      authorization_endpoint: `${base}/idp/authorize`,
      token_endpoint: `${base}/idp/token`,
    });
    expect(m.code_challenge_methods_supported).toEqual(['S256']);
  });

  it('a user who denies consent sends the client away with access_denied', async () => {
    const creds = await signUp();
    const auth = new MemoryOAuthProvider();
    await expect(
      new Client({ name: 'deny', version: '1' }).connect(
        new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: auth }),
      ),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    const browser = new Browser(fetchSend(base));
    // Sign in, then answer the consent page with Deny.
    let res = await browser.request('GET', auth.authorizationUrl!.href);
    let location = new URL(String(res.headers.location), base).href;
    res = await browser.request('GET', location);
    expect(res.body).toContain('to continue to Vitest Desktop');
    const loginAction = new URL(/action="([^"]+\/login)"/.exec(res.body)![1], base).href;
    res = await browser.request('POST', loginAction, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(creds).toString(),
    });
    while (res.status === 303 || res.status === 302) {
      location = new URL(String(res.headers.location), base).href;
      res = await browser.request('GET', location);
    }
    expect(res.body).toContain('Allow Vitest Desktop?');
    const deny = new URL(/action="([^"]+\/abort)"/.exec(res.body)![1], base).href;
    res = await browser.request('POST', deny, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    while (!String(res.headers.location ?? '').startsWith(redirectUri)) {
      res = await browser.request('GET', new URL(String(res.headers.location), base).href);
    }
    expect(new URL(String(res.headers.location)).searchParams.get('error')).toBe('access_denied');
  });

  it('registers only public clients with https or loopback redirect URIs, and rate limits registration', async () => {
    const confidential = await register({ redirect_uris: [redirectUri], client_name: 'x' });
    expect(confidential.status).toBe(400);
    expect(confidential.body.error).toBe('invalid_client_metadata');
    const plainHttp = await register({ redirect_uris: ['http://evil.example/cb'], token_endpoint_auth_method: 'none' });
    expect(plainHttp.status).toBe(400);
    expect(plainHttp.body.error).toBe('invalid_redirect_uri');
    const ccGrant = await register({
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      grant_types: ['client_credentials'],
      response_types: [],
    });
    expect(ccGrant.status).toBe(400);
    const https = await register({
      redirect_uris: ['https://client.example/cb'],
      token_endpoint_auth_method: 'none',
      application_type: 'web',
    });
    expect(https.status).toBe(201);
    expect(https.body.registration_access_token).toBeUndefined();
    // 6 per hour per IP: two SDK registrations above, four here → the next is refused.
    const over = await register({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' });
    expect(over.status).toBe(429);
    expect(over.body.code).toBe('rate_limited');
  });
});
