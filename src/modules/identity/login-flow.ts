/**
 * The OAuth 2.0 authorization-code flow (RFC 6749 §4.1 + PKCE, RFC 7636) as the platform's
 * client, against the embedded tenant (`/idp`) or an external OpenID Provider (`AUTH_ISSUER`):
 *
 * 1. {@link LoginFlow.start} — `GET /v1/auth/login`: `auth_url` + `state`; the state is stored
 *    hashed, bound to the PKCE verifier and the redirect URI, single use, 10-minute expiry.
 * 2–3. The user signs in at the provider, which redirects to the redirect URI with `code`.
 * 4. {@link LoginFlow.complete} — `POST /v1/auth/callback`: the code is exchanged with
 *    `openid-client` at the provider's token endpoint.
 * 5. The user profile is created (external provider, just-in-time) or fetched.
 *
 * In external mode this module also supplies the access-token verifier (issuer's JWKS).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { lt } from 'drizzle-orm';
import { createRemoteJWKSet, jwtVerify, errors as joseErrors, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { loginStates } from '../../db/schema/index.js';
import { AppError } from '../../http/errors.js';
import { consumeState } from '../../http/oauth-state.js';
import { hashSecret } from '../../http/ids.js';
import { IDP_ROUTES, resourceIndicatorFor } from './idp-endpoints.js';
import { consoleRedirectUri, redirectUriProblem } from './redirect-uris.js';
import type { AuthConfig, ProviderTokenSetSchema } from './schemas.js';
import type { IdentityService } from './service.js';
import { tokenError } from './tokens.js';

/** Lifetime of a login `state`, ms (issue: 10 minutes). */
export const LOGIN_STATE_TTL_MS = 10 * 60_000;

type Fetch = (
  url: string,
  options: { method: string; headers: Record<string, string>; body?: unknown },
) => Promise<Response>;

/** Token set of the callback and of provider refreshes (RFC 6749 §5.1 + OIDC `id_token`); `user_id` always set here. */
export type ProviderTokenSet = Static<typeof ProviderTokenSetSchema> & { user_id: string };

/** `GET /v1/auth/config` */
export type ProviderDescription = Static<typeof AuthConfig>;

function isLoopbackUrl(u: URL): boolean {
  return u.hostname === 'localhost' || u.hostname === '[::1]' || /^127\./.test(u.hostname);
}

/**
 * Map an error of the token endpoint (RFC 6749 §5.2) or of the transport to a platform error.
 * `refresh`: errors about the grant mean the refresh token is unknown/used/expired → 401.
 */
export function oauthError(err: unknown, kind: 'code' | 'refresh'): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof oidc.ResponseBodyError) {
    const desc = err.error_description ? `: ${err.error_description}` : '';
    if (err.error === 'invalid_grant') {
      return kind === 'refresh'
        ? new AppError('invalid_token', 'Refresh token is unknown, expired or was already used')
        : new AppError(
            'invalid_grant',
            `The authorization code is invalid, expired, already used, or was issued for another redirect_uri or PKCE verifier${desc}`,
          );
    }
    if (err.error === 'invalid_client' || err.error === 'unauthorized_client')
      return new AppError('invalid_client', `The identity provider rejected the client${desc}`);
    if (err.status >= 400 && err.status < 500)
      return new AppError('bad_request', `The identity provider rejected the request (${err.error})${desc}`);
    return new AppError('upstream_error', `The identity provider failed (${err.status} ${err.error})`);
  }
  if (err instanceof oidc.WWWAuthenticateChallengeError)
    return new AppError('invalid_client', 'The identity provider rejected the client credentials');
  if (err instanceof oidc.AuthorizationResponseError)
    return new AppError('invalid_grant', `The authorization response is an error: ${err.error}`);
  if (err instanceof oidc.ClientError)
    return new AppError('upstream_error', `Unexpected answer from the identity provider: ${err.message}`);
  return new AppError(
    'upstream_error',
    `The identity provider is unreachable: ${(err as Error)?.message ?? String(err)}`,
  );
}

/** The login flow of one app; created by {@link createLoginFlow}. */
export class LoginFlow {
  private config?: Promise<oidc.Configuration>;
  /** Exact redirect_uri for the code exchange of the current call (it may carry a query string). */
  private readonly redirectUri = new AsyncLocalStorage<string>();
  private jwks?: ReturnType<typeof createRemoteJWKSet>;

  constructor(
    private readonly ctx: AppContext,
    private readonly identity: IdentityService,
    /** The external issuer, or undefined for the embedded tenant. */
    readonly externalIssuer: string | undefined,
    private readonly fetchImpl: Fetch,
  ) {}

  get embedded(): boolean {
    return this.externalIssuer === undefined;
  }

  private get resourceParams(): Record<string, string> {
    const audience = this.ctx.config.auth.audience;
    // `resource` (RFC 8707) for standard providers, `audience` for Auth0-style ones.
    if (this.embedded) return {};
    return { audience, ...(/^[a-z][a-z0-9+.-]*:/i.test(audience) ? { resource: resourceIndicatorFor(audience) } : {}) };
  }

  /** openid-client configuration: built from known metadata (embedded) or by discovery (external, cached; retried after failures). */
  configuration(): Promise<oidc.Configuration> {
    if (!this.config) {
      this.config = this.buildConfiguration();
      this.config.catch(() => {
        this.config = undefined;
      });
    }
    return this.config;
  }

  private async buildConfiguration(): Promise<oidc.Configuration> {
    const { clientId, clientSecret } = this.ctx.config.auth;
    let config: oidc.Configuration;
    const customFetch: Fetch = (url, options) => {
      const exact = this.redirectUri.getStore();
      if (exact && options.body instanceof URLSearchParams && options.body.get('grant_type') === 'authorization_code') {
        options.body.set('redirect_uri', exact);
      }
      return this.fetchImpl(url, options);
    };
    if (this.embedded) {
      const issuer = this.identity.platformIssuer;
      config = new oidc.Configuration(
        {
          issuer,
          authorization_endpoint: `${issuer}${IDP_ROUTES.authorization}`,
          token_endpoint: `${issuer}${IDP_ROUTES.token}`,
          jwks_uri: `${issuer}${IDP_ROUTES.jwks}`,
          revocation_endpoint: `${issuer}${IDP_ROUTES.revocation}`,
          code_challenge_methods_supported: ['S256'],
        },
        clientId,
        undefined,
        oidc.None(),
      );
      if (issuer.startsWith('http:')) oidc.allowInsecureRequests(config);
    } else {
      const issuer = new URL(this.externalIssuer!);
      const insecure = issuer.protocol === 'http:';
      if (insecure && !isLoopbackUrl(issuer))
        this.ctx.log.warn({ issuer: issuer.href }, 'AUTH_ISSUER uses plain http: tokens travel unencrypted');
      config = await oidc.discovery(issuer, clientId, clientSecret, clientSecret ? undefined : oidc.None(), {
        execute: insecure ? [oidc.allowInsecureRequests] : [],
        [oidc.customFetch]: customFetch,
        timeout: 10,
      });
    }
    config[oidc.customFetch] = customFetch;
    return config;
  }

  /** `GET /v1/auth/config` */
  async describe(): Promise<ProviderDescription> {
    const { clientId, audience, scope } = this.ctx.config.auth;
    const issuer = this.externalIssuer ?? this.identity.platformIssuer;
    const base = { domain: new URL(issuer).host, clientId, audience, scope, issuer };
    try {
      const m = (await this.configuration()).serverMetadata();
      return {
        ...base,
        issuer: m.issuer,
        authorization_endpoint: m.authorization_endpoint,
        token_endpoint: m.token_endpoint,
        jwks_uri: m.jwks_uri,
      };
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message }, 'identity provider discovery failed');
      return base;
    }
  }

  /**
   * Step 1: the authorization URL and the state bound to a fresh PKCE verifier and `redirectUri`.
   * @throws AppError redirect_uri_not_allowed; upstream_error when discovery fails.
   */
  async start(redirectUri: string): Promise<{ auth_url: string; state: string }> {
    const problem = redirectUriProblem(redirectUri, this.ctx.config.auth.redirectUris, [
      consoleRedirectUri(this.ctx.config.publicUrl),
    ]);
    if (problem) throw new AppError('redirect_uri_not_allowed', problem);
    const config = await this.configuration().catch((err: unknown) => {
      throw oauthError(err, 'code');
    });
    const state = oidc.randomState();
    const verifier = oidc.randomPKCECodeVerifier();
    const challenge = await oidc.calculatePKCECodeChallenge(verifier);
    await this.ctx.db.insert(loginStates).values({
      stateHash: hashSecret(state),
      codeVerifier: verifier,
      redirectUri,
      expiresAt: new Date(Date.now() + LOGIN_STATE_TTL_MS),
    });
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: this.ctx.config.auth.scope,
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...this.resourceParams,
    });
    return { auth_url: url.href, state };
  }

  /**
   * Steps 4–5: consume the state, exchange the code, create or fetch the user.
   * @throws AppError invalid_login_state (unknown, used or expired state), redirect_uri_mismatch,
   *   invalid_grant (bad code, RFC 6749 §5.2), invalid_client, upstream_error.
   */
  async complete(input: {
    code: string;
    redirect_uri: string;
    state: string;
    iss?: string;
  }): Promise<ProviderTokenSet> {
    const row = await consumeState(this.ctx.db, loginStates, input.state, {
      code: 'invalid_login_state',
      restart: 'start again at GET /v1/auth/login',
    });
    if (row.redirectUri !== input.redirect_uri) {
      throw new AppError('redirect_uri_mismatch', 'redirect_uri differs from the one given to GET /v1/auth/login', {
        errors: [{ in: 'body', pointer: '/redirect_uri', message: 'must equal the redirect_uri of the login request' }],
      });
    }
    const callbackUrl = new URL(input.redirect_uri);
    callbackUrl.searchParams.set('code', input.code);
    callbackUrl.searchParams.set('state', input.state);

    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      const config = await this.configuration();
      // RFC 9207: a forwarded `iss` is checked; clients that only send code + state (the spec's
      // body) get the configured issuer, which is the only one this state can belong to.
      callbackUrl.searchParams.set('iss', input.iss ?? config.serverMetadata().issuer);
      tokens = await this.redirectUri.run(input.redirect_uri, () =>
        oidc.authorizationCodeGrant(
          config,
          callbackUrl,
          { pkceCodeVerifier: row.codeVerifier, expectedState: input.state, idTokenExpected: true },
          this.resourceParams,
        ),
      );
    } catch (err) {
      throw oauthError(err, 'code');
    }
    const user = await this.userOf(tokens);
    return this.tokenSet(tokens, user.subject);
  }

  /**
   * Refresh a provider-issued refresh token at its token endpoint (rotation: the old one stops working).
   * @throws AppError invalid_token when the refresh token is unknown, used or expired.
   */
  async refresh(refreshToken: string): Promise<ProviderTokenSet> {
    let tokens: Awaited<ReturnType<typeof oidc.refreshTokenGrant>>;
    try {
      tokens = await oidc.refreshTokenGrant(await this.configuration(), refreshToken, this.resourceParams);
    } catch (err) {
      throw oauthError(err, 'refresh');
    }
    const user = await this.userOf(tokens);
    return this.tokenSet(tokens, user.subject);
  }

  /**
   * Revoke a provider refresh token at the provider's revocation endpoint (RFC 7009). Best effort:
   * a provider without one, or an error, is logged and ignored — sign-out still clears the session.
   */
  async revoke(refreshToken: string): Promise<void> {
    try {
      await oidc.tokenRevocation(await this.configuration(), refreshToken, { token_type_hint: 'refresh_token' });
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message }, 'refresh token revocation at the provider failed');
    }
  }

  /** Step 5: the platform user of a token response (embedded: existing; external: created on first sign-in). */
  private async userOf(tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers) {
    if (this.embedded) {
      const p = await this.identity.verifyPlatformToken(tokens.access_token);
      const u = await this.identity.findUser(String(p.sub));
      if (!u) throw new AppError('invalid_token', 'The user of this token no longer exists');
      return u;
    }
    const p = await this.verifyExternal(tokens.access_token);
    const claims = { ...p, ...(tokens.claims() ?? {}) } as Record<string, unknown>;
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
    return this.identity.upsertExternalUser(this.identity.externalSubject(String(p.sub)), {
      email: str(claims.email),
      name: str(claims.name),
      picture: str(claims.picture),
    });
  }

  private tokenSet(
    tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers,
    subject: string,
  ): ProviderTokenSet {
    return {
      access_token: tokens.access_token,
      token_type: 'Bearer',
      expires_in: tokens.expires_in ?? this.ctx.config.auth.accessTokenTtlSeconds,
      ...(tokens.refresh_token ? { refresh_token: tokens.refresh_token } : {}),
      ...(tokens.id_token ? { id_token: tokens.id_token } : {}),
      ...(tokens.scope ? { scope: tokens.scope } : {}),
      user_id: subject,
    };
  }

  /**
   * Verify an access token of the external provider: signature against the issuer's JWKS,
   * `iss`, `aud` one of `audiences` (default `AUTH_AUDIENCE`), `exp`. @throws AppError token_expired | invalid_token |
   * service_unavailable (provider unreachable)
   */
  async verifyExternal(token: string, audiences: string[] = [this.ctx.config.auth.audience]): Promise<JWTPayload> {
    let config: oidc.Configuration;
    try {
      config = await this.configuration();
    } catch (err) {
      throw new AppError('service_unavailable', `The identity provider is unreachable: ${(err as Error).message}`);
    }
    const m = config.serverMetadata();
    if (!m.jwks_uri) throw new AppError('service_unavailable', 'The identity provider publishes no jwks_uri');
    this.jwks ??= createRemoteJWKSet(new URL(m.jwks_uri), { timeoutDuration: 5000, cooldownDuration: 30_000 });
    try {
      const { payload } = await jwtVerify(token, this.jwks, {
        issuer: m.issuer,
        audience: audiences,
        algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'],
      });
      return payload;
    } catch (err) {
      if (err instanceof joseErrors.JWKSTimeout || (err instanceof TypeError && /fetch/i.test(err.message))) {
        throw new AppError('service_unavailable', 'The identity provider key set is unreachable');
      }
      throw tokenError(err);
    }
  }

  /** Delete login states that expired more than an hour ago. */
  async purgeExpiredStates(): Promise<void> {
    await this.ctx.db.delete(loginStates).where(lt(loginStates.expiresAt, new Date(Date.now() - 3600_000)));
  }
}

/**
 * Create the login flow for `ctx.config`; in external mode wire the external token verifier
 * into `identity`. `fetchImpl` is used for provider calls (in-process for the embedded tenant).
 */
export function createLoginFlow(ctx: AppContext, identity: IdentityService, fetchImpl: Fetch): LoginFlow {
  const flow = new LoginFlow(ctx, identity, ctx.config.auth.issuer, fetchImpl);
  if (!flow.embedded) {
    identity.externalVerifier = (token, audiences) => flow.verifyExternal(token, audiences);
    identity.externalProvider = new URL(ctx.config.auth.issuer!).host;
  }
  const timer = setInterval(() => {
    flow.purgeExpiredStates().catch((err: Error) => ctx.log.warn({ err: err.message }, 'login state purge failed'));
  }, 10 * 60_000);
  timer.unref();
  ctx.onClose.push(() => clearInterval(timer));
  return flow;
}
