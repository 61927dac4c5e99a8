/**
 * MCP sign-in with a Client ID Metadata Document (MCP authorization 2025-11-25): the official 2.x
 * SDK client names itself by the https URL of its metadata, served by this test on 127.0.0.1 (TLS
 * with a test certificate the platform trusts through UPSTREAM_CA_FILE), signs a user in at /idp,
 * checks the RFC 9207 `iss` of the authorization response and calls /mcp. Tampered documents are
 * refused; the fetch is bounded (no redirects, size, time, cache, budget) and never reaches a
 * private address — nor loopback without ALLOW_LOOPBACK_UPSTREAMS. Dynamic registration requires
 * `application_type`.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  Client,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { afterAll, describe, expect, it } from 'vitest';
import { setupApp } from '../../helpers/app.js';
import { Browser, fetchSend } from '../../helpers/browser.js';
import { freePort } from '../../helpers/net.js';

const tls = (name: string) => fileURLToPath(new URL(`../../fixtures/tls/${name}`, import.meta.url));

/** The https server of the client's metadata documents: path → handler; counts requests per path. */
const docs = new Map<string, (res: import('node:http').ServerResponse) => void>();
const hits = new Map<string, number>();
const docServer = https.createServer(
  { key: readFileSync(tls('loopback-key.pem')), cert: readFileSync(tls('loopback-cert.pem')) },
  (req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const handler = docs.get(path);
    if (!handler) return void res.writeHead(404).end();
    handler(res);
  },
);
await new Promise<void>((resolve) => docServer.listen(0, '127.0.0.1', resolve));
const docBase = `https://127.0.0.1:${(docServer.address() as AddressInfo).port}`;
afterAll(async () => {
  docServer.closeAllConnections();
  await new Promise((r) => docServer.close(r));
});

const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const { app, ctx } = await setupApp({
  PUBLIC_URL: base,
  HOST: '127.0.0.1',
  PORT: String(port),
  UPSTREAM_CA_FILE: tls('loopback-cert.pem'),
  MCP_CLIENT_METADATA_FETCHES_PER_MINUTE: '1000',
});
await app.listen({ port, host: '127.0.0.1' });

// The same platform without the loopback switch (production default), reached in-process.
const strict = await setupApp({
  UPSTREAM_CA_FILE: tls('loopback-cert.pem'),
  ALLOW_LOOPBACK_UPSTREAMS: 'off',
  MCP_CLIENT_METADATA_FETCHES_PER_MINUTE: '2',
});

const redirectUri = `http://127.0.0.1:${await freePort()}/oauth/callback`;

/** Publish a metadata document at `path` (its `client_id` is its own URL unless `doc` says otherwise). */
function serve(path: string, doc: Record<string, unknown> = {}, headers: Record<string, string> = {}): string {
  const url = `${docBase}${path}`;
  const body = JSON.stringify({
    client_id: url,
    client_name: 'Vitest CIMD Desktop',
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...doc,
  });
  docs.set(path, (res) => res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(body));
  return url;
}

/** An MCP client application naming itself by `clientMetadataUrl`, state in memory. */
class DocumentClient implements OAuthClientProvider {
  client?: any;
  saved?: any;
  verifier?: string;
  discovery?: OAuthDiscoveryState;
  authorizationUrl?: URL;
  readonly redirectUrl = redirectUri;
  constructor(readonly clientMetadataUrl: string) {}
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Vitest CIMD Desktop', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(c: unknown) {
    this.client = c;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(t: unknown) {
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
  saveDiscoveryState(s: OAuthDiscoveryState) {
    this.discovery = s;
  }
  discoveryState() {
    return this.discovery;
  }
}

/** Let the SDK discover the server and build its authorization URL (it does not register). */
async function startSignIn(
  metadataUrl: string,
): Promise<{ auth: DocumentClient; transport: StreamableHTTPClientTransport }> {
  const auth = new DocumentClient(metadataUrl);
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: auth });
  await expect(new Client({ name: 'vitest-cimd', version: '1' }).connect(transport)).rejects.toBeInstanceOf(
    UnauthorizedError,
  );
  expect(auth.client?.client_id).toBe(metadataUrl);
  expect(auth.authorizationUrl?.searchParams.get('client_id')).toBe(metadataUrl);
  return { auth, transport };
}

async function signUp() {
  const email = `cimd-${randomBytes(5).toString('hex')}@example.test`;
  const password = 'cimd password 123';
  const res = await fetch(`${base}/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  expect(res.status).toBe(201);
  return { email, password };
}

/** The authorization endpoint's answer to a plain GET of `url` (an error page when the client is refused). */
async function authorize(url: string | URL) {
  const res = await fetch(url, { redirect: 'manual' });
  return { status: res.status, body: await res.text(), location: res.headers.get('location') };
}

function authorizeUrl(clientId: string, origin = base): string {
  const q = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: redirectUri,
    scope: 'mcp',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    resource: `${origin}/mcp`,
    state: 's1',
  });
  return `${origin}/idp/authorize?${q}`;
}

describe(`Client ID Metadata Documents on /idp (${ctx.database.engine})`, () => {
  it('advertises metadata-document client ids and the RFC 9207 iss parameter', async () => {
    const res = await fetch(`${base}/.well-known/oauth-authorization-server/idp`);
    const m = (await res.json()) as Record<string, unknown>;
    expect(m.client_id_metadata_document_supported).toBe(true);
    expect(m.authorization_response_iss_parameter_supported).toBe(true);
  });

  it('signs the official SDK client in by its metadata URL, with iss in the authorization response', async () => {
    const url = serve('/clients/desktop.json', {}, { 'cache-control': 'public, max-age=600' });
    const creds = await signUp();
    const { auth, transport } = await startSignIn(url);

    const back = await new Browser(fetchSend(base)).login(auth.authorizationUrl!.href, redirectUri, creds);
    expect(back.searchParams.get('error'), back.href).toBeNull();
    expect(back.searchParams.get('iss')).toBe(`${base}/idp`);
    // The SDK checks iss against the issuer it discovered (RFC 9207 §2.4) and exchanges the code.
    await transport.finishAuth(back.searchParams);
    expect(auth.saved?.access_token).toBeTruthy();
    expect(auth.saved?.refresh_token).toBeTruthy();

    const client = new Client({ name: 'vitest-cimd', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: auth }));
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('search_tools');
    await client.close();
    // One fetch for the whole sign-in (authorize, consent, token): the document is cached.
    expect(hits.get('/clients/desktop.json')).toBe(1);
  });

  it('the consent page names the host publishing the document and warns of a loopback redirect', async () => {
    const url = serve('/clients/consent.json', { client_name: 'Consent Check' });
    const creds = await signUp();
    const browser = new Browser(fetchSend(base));
    let res = await browser.request('GET', authorizeUrl(url));
    let at = new URL(String(res.headers.location), base).href;
    res = await browser.request('GET', at);
    const login = new URL(/action="([^"]+\/login)"/.exec(res.body)![1], base).href;
    res = await browser.request('POST', login, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(creds).toString(),
    });
    while (res.status === 303 || res.status === 302) {
      at = new URL(String(res.headers.location), base).href;
      res = await browser.request('GET', at);
    }
    expect(res.body).toContain('Allow Consent Check?');
    expect(res.body).toContain(`described by <strong>${new URL(docBase).host}</strong>`);
    expect(res.body).toContain('receives your sign-in on this computer');
  });

  it('the SDK refuses an authorization response whose iss is not the issuer (mix-up defence)', async () => {
    const url = serve('/clients/mixup.json');
    const creds = await signUp();
    const { auth, transport } = await startSignIn(url);
    const back = await new Browser(fetchSend(base)).login(auth.authorizationUrl!.href, redirectUri, creds);
    back.searchParams.set('iss', 'https://attacker.example/idp');
    await expect(transport.finishAuth(back.searchParams)).rejects.toThrow(/iss|issuer/i);
    expect(auth.saved).toBeUndefined();
  });

  it('refuses a document whose client_id is not its URL', async () => {
    const url = serve('/clients/tampered.json', { client_id: `${docBase}/clients/someone-else.json` });
    const { auth } = await startSignIn(url);
    const res = await authorize(auth.authorizationUrl!);
    expect(res.status).toBe(400);
    expect(res.body).toContain('invalid_client_metadata');
    expect(res.body).toContain('client_id does not match');
  });

  it('refuses a redirect_uri the document does not list', async () => {
    const url = serve('/clients/other-redirect.json', { redirect_uris: ['http://127.0.0.1:1/elsewhere'] });
    const { auth } = await startSignIn(url);
    const res = await authorize(auth.authorizationUrl!);
    expect(res.status).toBe(400);
    expect(res.body).toContain('redirect_uri');
    expect(res.location).toBeNull();
  });

  it('refuses documents that break the client policy', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['secret', { client_secret: 'shh' }, /client_secret/],
      ['basic', { token_endpoint_auth_method: 'client_secret_basic' }, /shared-secret/],
      ['pkjwt-inline', { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [] } }, /jwks_uri/],
      ['http-redirect', { redirect_uris: ['http://client.example/cb'] }, /loopback/],
      ['implicit', { grant_types: ['client_credentials'] }, /grant_types|no values supported/],
    ];
    for (const [name, doc, why] of cases) {
      const res = await authorize(authorizeUrl(serve(`/clients/${name}.json`, doc)));
      expect(res.status, name).toBe(400);
      expect(res.body, name).toMatch(/invalid_client/);
      expect(res.body, name).toMatch(why);
    }
  });

  it('bounds the fetch: no redirects followed, 5 KiB, 2.5 s', async () => {
    const good = serve('/clients/target.json');
    docs.set('/clients/moved.json', (res) => res.writeHead(302, { location: good }).end());
    const moved = await authorize(authorizeUrl(`${docBase}/clients/moved.json`));
    expect(moved.status).toBe(400);
    expect(moved.body).toContain('invalid_client');
    expect(hits.get('/clients/target.json') ?? 0).toBe(0);

    const big = serve('/clients/big.json', { client_name: 'x'.repeat(6 * 1024) });
    expect((await authorize(authorizeUrl(big))).status).toBe(400);

    docs.set('/clients/slow.json', () => undefined); // never answers
    const started = Date.now();
    const slow = await authorize(authorizeUrl(`${docBase}/clients/slow.json`));
    expect(slow.status).toBe(400);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('caches a no-store document for at least a minute (one fetch per client, not per request)', async () => {
    const url = serve('/clients/no-store.json', {}, { 'cache-control': 'no-store' });
    for (let i = 0; i < 3; i++) {
      const res = await authorize(authorizeUrl(url));
      expect(res.status).toBe(303);
    }
    expect(hits.get('/clients/no-store.json')).toBe(1);
  });

  it('refuses an http or non-URL client id that is not registered', async () => {
    const before = hits.get('/clients/desktop.json') ?? 0;
    for (const id of [`${docBase.replace('https:', 'http:')}/clients/desktop.json`, 'not-a-client', `${docBase}/`]) {
      const res = await authorize(authorizeUrl(id));
      expect(res.status, id).toBe(400);
      expect(res.body, id).toContain('invalid_client');
    }
    expect(hits.get('/clients/desktop.json') ?? 0).toBe(before);
  });

  it('without the loopback switch, never fetches from loopback or private addresses', async () => {
    const before = hits.get('/clients/desktop.json') ?? 0;
    const ids = [
      `${docBase}/clients/desktop.json`,
      'https://10.0.0.1/clients/internal.json',
      'https://169.254.169.254/latest/meta-data.json',
    ];
    for (const [i, id] of ids.entries()) {
      const res = await strict.app.inject({
        method: 'GET',
        url: authorizeUrl(id, strict.config.publicUrl),
        remoteAddress: `203.0.113.${i + 1}`,
      });
      expect(res.statusCode, id).toBe(400);
      // Allowed by the budget, refused by the address guard.
      expect(res.body, id).toContain('invalid_client: client_id metadata document fetch failed');
    }
    expect(hits.get('/clients/desktop.json') ?? 0).toBe(before);
  });

  it('budgets fetches per client IP (MCP_CLIENT_METADATA_FETCHES_PER_MINUTE)', async () => {
    const ask = (n: number, headers: Record<string, string> = {}) =>
      strict.app.inject({
        method: 'GET',
        url: authorizeUrl(`https://192.0.2.${n}/clients/c.json`, strict.config.publicUrl),
        remoteAddress: '198.51.100.9',
        headers,
      });
    // Two fetches allowed this minute for this IP (each refused by the address guard), the third over budget.
    expect((await ask(1)).body).toContain('fetch failed');
    expect((await ask(2)).body).toContain('fetch failed');
    const over = await ask(3);
    expect(over.statusCode).toBe(400);
    expect(over.body).toContain('fetch not allowed');
    // A client-supplied X-Forwarded-For does not buy a fresh budget (no trusted proxy here).
    expect((await ask(5, { 'x-forwarded-for': '192.0.2.200' })).body).toContain('fetch not allowed');
    // Another IP has its own budget.
    const other = await strict.app.inject({
      method: 'GET',
      url: authorizeUrl('https://192.0.2.4/clients/c.json', strict.config.publicUrl),
      remoteAddress: '198.51.100.10',
    });
    expect(other.body).toContain('fetch failed');
  });
});

describe(`Dynamic registration requires application_type (${ctx.database.engine})`, () => {
  const register = async (body: Record<string, unknown>) => {
    const res = await fetch(`${base}/idp/reg`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  it('refuses a registration without application_type with invalid_client_metadata (RFC 7591 §3.2.2)', async () => {
    const res = await register({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client_metadata');
    expect(res.body.error_description).toContain('application_type');
    const bogus = await register({
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      application_type: 'desktop',
    });
    expect(bogus.status).toBe(400);
    expect(bogus.body.error).toBe('invalid_client_metadata');
  });

  it('registers a native client with a loopback redirect URI and a web client with an https one', async () => {
    const native = await register({
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      application_type: 'native',
    });
    expect(native.status).toBe(201);
    expect(native.body.application_type).toBe('native');
    const web = await register({
      redirect_uris: ['https://client.example/cb'],
      token_endpoint_auth_method: 'none',
      application_type: 'web',
    });
    expect(web.status).toBe(201);
  });
});
