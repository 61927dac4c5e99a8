/**
 * A real upstream for connected-account tests (issue 15): an OAuth 2.0 authorization server (a
 * separately started `oidc-provider` on loopback, as in `external-idp.ts`) issuing short-lived JWT
 * access tokens for a resource and rotating refresh tokens, with RFC 7009 revocation; and a
 * resource API ("notes") that verifies those tokens with `jose` against the provider's JWKS and
 * answers each account's own notes.
 *
 * The consent page is a sign-in form ("sign in to Notes and allow <client> …") that the test's
 * `Browser` fills: the account is the e-mail typed; consent is granted by that same submit.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';
import { Browser, fetchSend, injectSend, type Send } from './browser.js';
import { grantConsent } from './external-idp.js';
import type { FastifyInstance } from 'fastify';

export interface OAuthUpstream {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The resource indicator / audience of the notes API's tokens. */
  resource: string;
  /** Base URL of the notes API (`GET /notes`). */
  apiUrl: string;
  /** Refresh-token grants the provider has answered successfully. */
  refreshes(): number;
  /** Lifetime of access tokens issued from now on, seconds. */
  setAccessTokenTtl(seconds: number): void;
  /** The notes API answers 401 to this token id (`jti`) from now on. */
  rejectJti(jti: string): void;
  /** Bearer tokens the notes API received, in order (decoded payloads of the verified ones). */
  seenTokens: JWTPayload[];
  /** Revoke `token` at the provider's RFC 7009 endpoint (as the client). */
  revoke(token: string): Promise<void>;
  /** Refresh at the provider's token endpoint (as the client): status and body. */
  refreshGrant(refreshToken: string): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

const SCOPES = ['openid', 'offline_access', 'notes:read'];

function page(res: http.ServerResponse, html: string): void {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(html);
}

async function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** Start the authorization server and the notes API; `redirectUri` is the platform's callback. */
export async function startOAuthUpstream(opts: {
  redirectUri: string;
  accessTokenTtl?: number;
}): Promise<OAuthUpstream> {
  const clientId = 'agent-platform';
  const clientSecret = randomBytes(24).toString('base64url');
  let ttl = opts.accessTokenTtl ?? 3600;
  let refreshCount = 0;
  const rejected = new Set<string>();
  const seenTokens: JWTPayload[] = [];
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = {
    ...(await exportJWK(privateKey)),
    kid: `up-${randomBytes(4).toString('hex')}`,
    alg: 'RS256',
    use: 'sig',
  };

  let handler: http.RequestListener = (_req, res) => res.end();
  const server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const api = http.createServer((req, res) => void notes(req, res));
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  const apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  const resource = `${apiUrl}/`;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [opts.redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk as never] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    routes: { authorization: '/authorize', token: '/token', revocation: '/revoke', jwks: '/jwks' },
    scopes: SCOPES,
    claims: { openid: ['sub'], email: ['email'] },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true, allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'notes:read',
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: ttl,
        }),
      },
    },
    issueRefreshToken: () => true,
    rotateRefreshToken: () => true,
    ttl: {
      AccessToken: () => ttl,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 600,
      Session: 3600,
      Grant: 14 * 24 * 3600,
      RefreshToken: 14 * 24 * 3600,
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, email: sub }) }),
  });
  provider.on('grant.success', (ctx) => {
    if (ctx.oidc.params?.grant_type === 'refresh_token') refreshCount++;
  });
  const callback = provider.callback();

  handler = async (req, res) => {
    const m = /^\/interaction\/([^/?]+)(\/login)?/.exec(req.url ?? '');
    if (!m) return callback(req, res);
    try {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'login') {
        if (req.method === 'POST' && m[2]) {
          const form = await readForm(req);
          const email = form.get('email') ?? '';
          if (!email) throw new Error('email is required');
          return await provider.interactionFinished(
            req,
            res,
            { login: { accountId: email } },
            { mergeWithLastSubmission: false },
          );
        }
        const scope = String(details.params.scope ?? '');
        return page(
          res,
          `<!doctype html><title>Notes</title><h1>Sign in to Notes</h1><p>${String(details.params.client_id)} asks to: ${scope}</p>` +
            `<form method="post" action="/interaction/${m[1]}/login"><input name="email"><input name="password" type="password"><button>Sign in and allow</button></form>`,
        );
      }
      // The sign-in form above also asked for consent: grant what the client requested.
      await grantConsent(provider, req, res, details);
    } catch (err) {
      res.statusCode = 500;
      res.end(String((err as Error).message));
    }
  };

  const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  async function notes(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', apiUrl);
    const auth = /^Bearer (\S+)$/.exec(String(req.headers.authorization ?? ''));
    const token = auth?.[1] ?? url.searchParams.get('access_token');
    const deny = (why: string) => {
      res.writeHead(401, {
        'content-type': 'application/json',
        'www-authenticate': `Bearer error="invalid_token", error_description="${why}"`,
      });
      res.end(JSON.stringify({ error: 'invalid_token', why }));
    };
    if (!token) return deny('no token');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, { issuer, audience: resource, typ: 'at+jwt' }));
    } catch (err) {
      return deny((err as Error).message);
    }
    seenTokens.push(payload);
    if (payload.jti && rejected.has(payload.jti)) return deny('token rejected');
    if (
      !String(payload.scope ?? '')
        .split(' ')
        .includes('notes:read')
    )
      return deny('scope notes:read missing');
    const body = JSON.stringify({
      sub: payload.sub,
      jti: payload.jti,
      notes: [`first note of ${payload.sub}`, `second note of ${payload.sub}`],
      path: url.pathname,
    });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  }

  const basic = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
  const form = { 'content-type': 'application/x-www-form-urlencoded', authorization: basic };
  return {
    issuer,
    clientId,
    clientSecret,
    resource,
    apiUrl,
    seenTokens,
    refreshes: () => refreshCount,
    setAccessTokenTtl(seconds) {
      ttl = seconds;
    },
    rejectJti(jti) {
      rejected.add(jti);
    },
    async revoke(token) {
      const res = await fetch(`${issuer}/revoke`, {
        method: 'POST',
        headers: form,
        body: new URLSearchParams({ token, token_type_hint: 'refresh_token' }),
      });
      if (res.status !== 200) throw new Error(`revocation failed: ${res.status}`);
    },
    async refreshGrant(refreshToken) {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: form,
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    async close() {
      for (const s of [server, api]) {
        s.closeAllConnections();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
  };
}

/**
 * A browser that reaches the upstream over real sockets and the platform through `app.inject`
 * (the platform's PUBLIC_URL host). Cookies of both are kept in one jar (names do not collide).
 */
export function connectionBrowser(app: FastifyInstance, upstream: { issuer: string }): Browser {
  const toUpstream = fetchSend(upstream.issuer);
  const toApp = injectSend(app);
  const send: Send = (req) =>
    new URL(req.url, upstream.issuer).origin === upstream.issuer ? toUpstream(req) : toApp(req);
  return new Browser(send);
}
