/**
 * The platform as an OAuth 2.0 client of upstream services (connected accounts,
 * docs/connections.md), on `openid-client`: authorization URL (RFC 6749 §4.1.1 + PKCE, RFC 7636;
 * `resource`, RFC 8707; `audience`), code exchange with the state and RFC 9207 `iss` checks,
 * refresh (RFC 6749 §6) and revocation (RFC 7009). Every request to the authorization server goes
 * through the guarded upstream client ({@link guardedFetch}: address checks, timeout, size cap).
 *
 * Endpoints come from OpenID Connect / RFC 8414 discovery of `issuer` (cached per issuer and
 * client, failures retried) or from the service's `authorization_url` + `token_url` (+ `revocation_url`).
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import * as oidc from 'openid-client';
import type { AppContext } from '../context.js';
import type { OAuth2Settings } from '../db/schema/index.js';
import { guardedFetch } from './http.js';

/** A service's OAuth 2.0 client: its settings and the decrypted client secret (never log it). */
export interface OAuth2Client {
  settings: OAuth2Settings;
  clientSecret: string | null;
}

/** Tokens of a token response (RFC 6749 §5.1). `expiresIn` in seconds; absent when not told. */
export interface UpstreamTokens {
  accessToken: string;
  refreshToken?: string;
  expiresIn?: number;
  /** Granted scopes (`scope` of the response); absent when the server did not say. */
  scopes?: string[];
}

/**
 * Why an exchange with the authorization server failed. `grant`: the code or refresh token is no
 * longer good (`invalid_grant`, RFC 6749 §5.2) — the user must authorize again; `client`: the
 * service's client credentials are refused; `denied`: the authorization response is an error
 * (e.g. `access_denied`); `response`: an answer that fails the checks (state, `iss`, shape);
 * `unavailable`: transport failure or a 5xx.
 */
export class OAuthUpstreamError extends Error {
  constructor(
    readonly kind: 'grant' | 'client' | 'denied' | 'response' | 'unavailable',
    message: string,
    /** The OAuth `error` code when the server sent one. */
    readonly error?: string,
  ) {
    super(message);
  }
}

/** Discovered configurations per app: keyed by issuer, client id, auth method and a hash of the secret. */
const discovered = new WeakMap<object, LRUCache<string, Promise<oidc.Configuration>>>();

function isLoopback(u: URL): boolean {
  return u.hostname === 'localhost' || u.hostname === '[::1]' || /^127\./.test(u.hostname);
}

function clientAuth(c: OAuth2Client): oidc.ClientAuth {
  if (!c.clientSecret || c.settings.token_endpoint_auth_method === 'none') return oidc.None();
  return c.settings.token_endpoint_auth_method === 'client_secret_post'
    ? oidc.ClientSecretPost(c.clientSecret)
    : oidc.ClientSecretBasic(c.clientSecret);
}

/** openid-client's `customFetch` over the guarded upstream client (form bodies become strings). */
function customFetch(ctx: AppContext): oidc.CustomFetch {
  const fetchGuarded = guardedFetch(ctx, { maxResponseBytes: 1024 * 1024 });
  return (url, options) => {
    const body = options.body instanceof URLSearchParams ? options.body.toString() : options.body;
    return fetchGuarded(url, {
      method: options.method,
      headers: options.headers,
      body: body as BodyInit | null | undefined,
      signal: options.signal,
    });
  };
}

/** Plain `http:` endpoints are accepted on loopback only (manifest validation enforces it). */
function allowHttp(config: oidc.Configuration, urls: Array<string | undefined>): void {
  if (urls.some((u) => u !== undefined && new URL(u).protocol === 'http:')) oidc.allowInsecureRequests(config);
}

/**
 * The openid-client configuration of `client`.
 * @throws OAuthUpstreamError unavailable (discovery failed)
 */
export async function oauth2Configuration(ctx: AppContext, client: OAuth2Client): Promise<oidc.Configuration> {
  const s = client.settings;
  if (s.authorization_url && s.token_url) {
    const config = new oidc.Configuration(
      {
        // Without a configured issuer, a provider that sends RFC 9207 `iss` must send its origin.
        issuer: s.issuer ?? new URL(s.authorization_url).origin,
        authorization_endpoint: s.authorization_url,
        token_endpoint: s.token_url,
        ...(s.revocation_url ? { revocation_endpoint: s.revocation_url } : {}),
      },
      s.client_id,
      undefined,
      clientAuth(client),
    );
    config[oidc.customFetch] = customFetch(ctx);
    allowHttp(config, [s.authorization_url, s.token_url, s.revocation_url]);
    return config;
  }
  let cache = discovered.get(ctx.config);
  if (!cache) discovered.set(ctx.config, (cache = new LRUCache({ max: 1000, ttl: 3600_000 })));
  const key = [
    s.issuer,
    s.client_id,
    s.token_endpoint_auth_method,
    createHash('sha256')
      .update(client.clientSecret ?? '')
      .digest('hex'),
  ].join('\n');
  let pending = cache.get(key);
  if (!pending) {
    pending = discover(ctx, client);
    cache.set(key, pending);
    pending.catch(() => cache.delete(key));
  }
  return pending;
}

async function discover(ctx: AppContext, client: OAuth2Client): Promise<oidc.Configuration> {
  const issuer = new URL(client.settings.issuer!);
  const insecure = issuer.protocol === 'http:' && isLoopback(issuer);
  const options = {
    execute: insecure ? [oidc.allowInsecureRequests] : [],
    [oidc.customFetch]: customFetch(ctx),
    timeout: 10,
  };
  let config: oidc.Configuration;
  try {
    config = await oidc.discovery(issuer, client.settings.client_id, undefined, clientAuth(client), options);
  } catch {
    try {
      // Not an OpenID Provider: RFC 8414 authorization-server metadata.
      config = await oidc.discovery(issuer, client.settings.client_id, undefined, clientAuth(client), {
        ...options,
        algorithm: 'oauth2',
      });
    } catch (err) {
      throw new OAuthUpstreamError('unavailable', `Discovery of ${issuer.href} failed: ${(err as Error).message}`);
    }
  }
  config[oidc.customFetch] = customFetch(ctx);
  return config;
}

/** Extra authorization/token parameters: `resource` (RFC 8707) and `audience`. */
function resourceParams(s: OAuth2Settings, at: 'authorize' | 'token'): Record<string, string> {
  return {
    ...(s.resource ? { resource: s.resource } : {}),
    ...(s.audience && at === 'authorize' ? { audience: s.audience } : {}),
  };
}

/** PKCE verifier and its S256 challenge (RFC 7636 §4.1–4.2). */
export async function newPkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = oidc.randomPKCECodeVerifier();
  return { verifier, challenge: await oidc.calculatePKCECodeChallenge(verifier) };
}

/** A fresh opaque `state` value (RFC 6749 §10.12). */
export function newState(): string {
  return oidc.randomState();
}

/** The authorization request URL (RFC 6749 §4.1.1) the user opens at the upstream. */
export function authorizationUrl(
  config: oidc.Configuration,
  s: OAuth2Settings,
  p: { redirectUri: string; state: string; codeChallenge: string | null },
): string {
  return oidc.buildAuthorizationUrl(config, {
    response_type: 'code',
    redirect_uri: p.redirectUri,
    state: p.state,
    ...(s.scopes.length ? { scope: s.scopes.join(' ') } : {}),
    ...(p.codeChallenge ? { code_challenge: p.codeChallenge, code_challenge_method: 'S256' } : {}),
    ...resourceParams(s, 'authorize'),
  }).href;
}

function tokensOf(r: oidc.TokenEndpointResponse): UpstreamTokens {
  return {
    accessToken: r.access_token,
    ...(r.refresh_token ? { refreshToken: r.refresh_token } : {}),
    ...(typeof r.expires_in === 'number' ? { expiresIn: r.expires_in } : {}),
    ...(typeof r.scope === 'string' ? { scopes: r.scope.split(' ').filter(Boolean) } : {}),
  };
}

/** Map an openid-client failure to an {@link OAuthUpstreamError}. */
function upstreamError(err: unknown): OAuthUpstreamError {
  if (err instanceof OAuthUpstreamError) return err;
  if (err instanceof oidc.ResponseBodyError) {
    const desc = err.error_description ? `: ${err.error_description}` : '';
    if (err.error === 'invalid_grant')
      return new OAuthUpstreamError('grant', `The grant is no longer valid${desc}`, err.error);
    if (err.error === 'invalid_client' || err.error === 'unauthorized_client')
      return new OAuthUpstreamError('client', `The upstream refused the service's OAuth client${desc}`, err.error);
    if (err.status >= 500)
      return new OAuthUpstreamError(
        'unavailable',
        `The upstream authorization server failed (${err.status} ${err.error})`,
        err.error,
      );
    return new OAuthUpstreamError('response', `The upstream refused the request (${err.error})${desc}`, err.error);
  }
  if (err instanceof oidc.AuthorizationResponseError) {
    const desc = err.error_description ? `: ${err.error_description}` : '';
    return new OAuthUpstreamError('denied', `The authorization was not granted (${err.error})${desc}`, err.error);
  }
  if (err instanceof oidc.WWWAuthenticateChallengeError)
    return new OAuthUpstreamError('client', "The upstream refused the service's OAuth client");
  if (err instanceof oidc.ClientError) {
    // openid-client wraps oauth4webapi's check failures ("invalid response encountered"): say which check.
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return new OAuthUpstreamError(
      'response',
      `Unexpected answer from the upstream authorization server (${err.message}${cause})`,
    );
  }
  return new OAuthUpstreamError(
    'unavailable',
    `The upstream authorization server is unreachable: ${(err as Error)?.message ?? String(err)}`,
  );
}

/**
 * Exchange the authorization code of `callbackUrl` (the redirect URI with the response's query:
 * `code`, `state`, `iss`?, or `error`) at the token endpoint. Checks `state` and, when the
 * response carries one, `iss` (RFC 9207) against the issuer.
 * @throws OAuthUpstreamError
 */
export async function exchangeCode(
  ctx: AppContext,
  client: OAuth2Client,
  callbackUrl: URL,
  checks: { state: string; codeVerifier: string | null },
): Promise<UpstreamTokens> {
  try {
    const config = await oauth2Configuration(ctx, client);
    const r = await oidc.authorizationCodeGrant(
      config,
      callbackUrl,
      { expectedState: checks.state, ...(checks.codeVerifier ? { pkceCodeVerifier: checks.codeVerifier } : {}) },
      resourceParams(client.settings, 'token'),
    );
    return tokensOf(r);
  } catch (err) {
    throw upstreamError(err);
  }
}

/** Refresh (RFC 6749 §6). The answer may rotate the refresh token. @throws OAuthUpstreamError */
export async function refreshTokens(
  ctx: AppContext,
  client: OAuth2Client,
  refreshToken: string,
): Promise<UpstreamTokens> {
  try {
    return tokensOf(
      await oidc.refreshTokenGrant(
        await oauth2Configuration(ctx, client),
        refreshToken,
        resourceParams(client.settings, 'token'),
      ),
    );
  } catch (err) {
    throw upstreamError(err);
  }
}

/**
 * Revoke `token` at the upstream's RFC 7009 endpoint. Returns false when the upstream has none.
 * @throws OAuthUpstreamError
 */
export async function revokeToken(
  ctx: AppContext,
  client: OAuth2Client,
  token: string,
  hint: 'refresh_token' | 'access_token',
): Promise<boolean> {
  try {
    const config = await oauth2Configuration(ctx, client);
    if (!config.serverMetadata().revocation_endpoint) return false;
    await oidc.tokenRevocation(config, token, { token_type_hint: hint });
    return true;
  } catch (err) {
    throw upstreamError(err);
  }
}
