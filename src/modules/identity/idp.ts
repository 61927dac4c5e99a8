/**
 * The pre-configured identity-provider tenant (DESIGN.md §6): a real OpenID Provider
 * (`oidc-provider`) served by this process under `/idp`, issuer `<PUBLIC_URL>/idp`.
 *
 * - Authorization code flow with PKCE S256 required (RFC 7636), refresh tokens with
 *   `offline_access` (rotated, single use), RFC 9207 `iss` in authorization responses.
 * - Access tokens are JWTs (RFC 9068, `typ: at+jwt`) for the API resource (RFC 8707 resource
 *   indicator), audience `AUTH_AUDIENCE`, lifetime `AUTH_ACCESS_TOKEN_TTL`, signed RS256 with the
 *   platform keys, `sub` = the platform user id and claims `roles`, `email`. They verify exactly
 *   like the platform's own tokens ({@link IdentityService.verifyPlatformToken}).
 * - Users are the platform's user table; the sign-in page checks passwords with
 *   {@link IdentityService.checkPassword}. Consent is implicit for the first-party client.
 * - Storage: the database ({@link DbAdapter}); cookie keys derive from a secret stored there.
 */
import { hkdfSync } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Provider, { errors as oidcErrors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import type { Config } from '../../config.js';
import { DbAdapter, purgeExpiredPayloads } from './idp-adapter.js';
import { MCP_SCOPE, clientNameOf, consentPage, grantAndContinue, mcpAuthorizationRoutes, mcpResourceServerInfo, registrationSettings } from './idp-mcp.js';
import { PAGE_HEADERS, errorPage, loginPage } from './idp-pages.js';
import { loadOrCreateSecret } from './keys.js';
import { consoleRedirectUri, isRedirectUriAllowed } from './redirect-uris.js';
import type { IdentityService } from './service.js';
import { userinfoRoutes } from './userinfo.js';

/** Path prefix the provider is mounted at. */
export const IDP_PREFIX = '/idp';

/** Endpoint paths under {@link IDP_PREFIX} (the spec fixes `/authorize`). */
export const IDP_ROUTES = {
  authorization: '/authorize',
  token: '/token',
  jwks: '/jwks',
  userinfo: '/userinfo',
  revocation: '/revoke',
  end_session: '/logout',
} as const;

/** The resource indicator (RFC 8707) of the API: `AUTH_AUDIENCE` when it is a URI, else a URN. */
export function resourceIndicatorFor(audience: string): string {
  return /^[a-z][a-z0-9+.-]*:/i.test(audience) ? audience : `urn:agent-platform:${audience}`;
}

const OIDC_SCOPES = ['openid', 'profile', 'email', 'offline_access'];

/** TRUST_PROXY per provider (the provider itself always trusts the headers the mount sets). */
const trustedProxy = new WeakMap<Provider, boolean>();

/** Build the embedded provider (not yet mounted: see {@link idpRoutes}). */
export async function createEmbeddedIdp(ctx: AppContext, identity: IdentityService): Promise<Provider> {
  const auth = ctx.config.auth;
  const issuer = identity.platformIssuer;
  const clientId = auth.clientId;
  const indicator = resourceIndicatorFor(auth.audience);
  const apiScope = auth.scope;
  const cookieSecret = await loadOrCreateSecret(ctx.db, 'idp_cookie_secret');
  const cookieKey = Buffer.from(hkdfSync('sha256', cookieSecret, Buffer.alloc(0), 'agent-platform idp cookies v1', 32)).toString('base64url');
  // MCP clients register themselves (RFC 7591) and ask for the /mcp resource (idp-mcp.ts).
  const { registration, extraClientMetadata } = registrationSettings();

  const configuration: Configuration = {
    adapter: (model: string) => new DbAdapter(ctx.db, model),
    clients: [
      {
        client_id: clientId,
        client_name: 'Agent Platform',
        application_type: 'web',
        // A public client (spec: "public client identifier"): PKCE instead of a secret (RFC 8252 §8.4).
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        // The real policy is isRedirectUriAllowed (patched in below); the provider needs one entry.
        redirect_uris: auth.redirectUris.length ? auth.redirectUris : ['http://127.0.0.1/callback'],
      },
    ],
    jwks: { keys: identity.keys.privateJwks as never },
    cookies: {
      keys: [cookieKey],
      names: { session: 'ap_idp_session', interaction: 'ap_idp_interaction', resume: 'ap_idp_resume' },
      long: { httpOnly: true, sameSite: 'lax', signed: true },
      short: { httpOnly: true, sameSite: 'lax', signed: true },
    },
    // `mcp`: the scope of the /mcp resource, registrable by MCP clients (idp-mcp.ts).
    scopes: [...OIDC_SCOPES, MCP_SCOPE],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'picture', 'updated_at'] },
    // Profile claims go into the ID token too (and are served at the UserInfo endpoint, userinfo.ts).
    conformIdTokenClaims: false,
    routes: IDP_ROUTES,
    // The UserInfo endpoint (OIDC Core §5.3) is served by userinfo.ts (the provider's own takes
    // only opaque tokens; this tenant's access tokens are JWTs for the API), advertised here.
    discovery: { userinfo_endpoint: `${issuer}${IDP_ROUTES.userinfo}` },
    pkce: { required: () => true },
    extraClientMetadata,
    features: {
      registration,
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      revocation: { enabled: true },
      rpInitiatedLogout: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => indicator,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resourceIndicator) => {
          const mcp = mcpResourceServerInfo(ctx.config, resourceIndicator);
          if (mcp) return mcp;
          if (resourceIndicator !== indicator) throw new oidcErrors.InvalidTarget();
          return {
            scope: apiScope,
            audience: auth.audience,
            accessTokenTTL: auth.accessTokenTtlSeconds,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    ttl: {
      AccessToken: auth.accessTokenTtlSeconds,
      IdToken: auth.accessTokenTtlSeconds,
      AuthorizationCode: 60,
      Interaction: 600,
      RefreshToken: auth.refreshTokenTtlSeconds,
      Grant: auth.refreshTokenTtlSeconds,
      Session: auth.refreshTokenTtlSeconds,
    },
    // Refresh tokens are single use: each refresh returns a new one; replaying an old one
    // revokes the grant (OAuth 2.0 Security BCP §4.14.2).
    rotateRefreshToken: () => true,
    // OIDC Core §11 drops `offline_access` unless prompt=consent; for the first-party client
    // refresh tokens are part of the contract (spec: token set has refresh_token), so issue them
    // always and do not tie them to the tenant's browser session.
    // Registered (MCP) clients get one when they registered for the refresh_token grant (OAuth 2.1
    // §4.3: rotated refresh tokens for public clients).
    issueRefreshToken: (_ctx, client) => client.clientId === clientId || client.grantTypeAllowed('refresh_token'),
    expiresWithSession: (kctx, code) => kctx.oidc.client?.clientId !== clientId && !code.scopes.has('offline_access'),
    interactions: { url: (_ctx, interaction) => `${IDP_PREFIX}/interaction/${interaction.uid}` },
    async findAccount(_ctx, sub) {
      const u = await identity.findUser(sub);
      if (!u) return undefined;
      return {
        accountId: u.id,
        claims: () => ({
          sub: u.id,
          email: u.email ?? undefined,
          email_verified: false,
          name: u.name ?? undefined,
          picture: u.picture ?? undefined,
          updated_at: Math.floor(u.updatedAt.getTime() / 1000),
        }),
      };
    },
    async extraTokenClaims(_ctx, token) {
      if (token.kind !== 'AccessToken' || !('accountId' in token) || typeof token.accountId !== 'string') return undefined;
      const u = await identity.findUser(token.accountId);
      return u ? { roles: u.roles, email: u.email ?? undefined } : undefined;
    },
    // First-party client: consent is implicit, so grant what it asks for (no consent page).
    async loadExistingGrant(kctx: KoaContextWithOIDC) {
      const oidc = kctx.oidc;
      const client = oidc.client!;
      const session = oidc.session!;
      const grantId = (oidc.result?.consent as { grantId?: string } | undefined)?.grantId ?? session.grantIdFor(client.clientId);
      let grant = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
      if (client.clientId !== clientId) return grant;
      if (!grant || grant.accountId !== session.accountId) grant = new oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      const requested = String(oidc.params?.scope ?? '').split(' ').filter(Boolean);
      grant.addOIDCScope(requested.filter((s) => OIDC_SCOPES.includes(s)).join(' '));
      const apiScopes = new Set(apiScope.split(' '));
      grant.addResourceScope(indicator, requested.filter((s) => apiScopes.has(s)).join(' '));
      await grant.save();
      return grant;
    },
    async renderError(kctx, out) {
      kctx.set(PAGE_HEADERS);
      kctx.body = errorPage(out);
    },
    clientBasedCORS: () => false,
  };

  const provider = new Provider(issuer, configuration);
  // X-Forwarded-Host/Proto are always set by the mount (idpRoutes) from PUBLIC_URL.
  provider.proxy = true;
  trustedProxy.set(provider, ctx.config.trustProxy);

  // Redirect URIs of the first-party client follow the platform's policy (allow-list, or any
  // loopback URI per RFC 8252 §7.3), not only the registered list.
  const Client = provider.Client as unknown as { prototype: { redirectUriAllowed(this: { clientId: string }, uri: string): boolean } };
  const registered = Client.prototype.redirectUriAllowed;
  Client.prototype.redirectUriAllowed = function (this: { clientId: string }, uri: string) {
    if (this.clientId === clientId) return isRedirectUriAllowed(uri, auth.redirectUris, [consoleRedirectUri(ctx.config.publicUrl)]);
    return registered.call(this, uri);
  };

  provider.on('server_error', (_kctx: unknown, err: Error) => ctx.log.error({ err }, 'identity provider error'));

  // Expired provider rows and login states are purged in the background.
  const timer = setInterval(() => {
    purgeExpiredPayloads(ctx.db).catch((err: Error) => ctx.log.warn({ err: err.message }, 'idp purge failed'));
  }, 10 * 60_000);
  timer.unref();
  ctx.onClose.push(() => clearInterval(timer));
  return provider;
}

/**
 * `fetch` that answers requests for this service's own URLs in-process (`app.inject`), so the
 * server-side code exchange with the embedded provider needs no network round trip and works
 * even where `PUBLIC_URL` does not resolve from the server itself.
 */
export function inProcessFetch(app: FastifyInstance) {
  return async (url: string, options: { method: string; headers: Record<string, string>; body?: unknown }): Promise<Response> => {
    const u = new URL(url);
    const body = options.body === undefined || options.body === null ? undefined : String(options.body);
    const res = await app.inject({
      method: options.method as 'GET',
      url: u.pathname + u.search,
      headers: { ...options.headers, host: u.host },
      ...(body !== undefined ? { payload: body } : {}),
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (Array.isArray(v)) for (const x of v) headers.append(k, String(x));
      else if (v !== undefined) headers.set(k, String(v));
    }
    const noBody = res.statusCode === 204 || res.statusCode === 304 || res.rawPayload.length === 0;
    return new Response(noBody ? null : new Uint8Array(res.rawPayload), { status: res.statusCode, headers });
  };
}

const InteractionParams = Type.Object({ uid: Type.String({ minLength: 1, maxLength: 100 }) });
const LoginForm = Type.Object({ email: Type.String({ maxLength: 254 }), password: Type.String({ maxLength: 256 }) });

/** Mount the provider under `/idp` and serve its sign-in pages. */
export async function idpRoutes(app: FastifyInstance, { identity, provider, config }: { identity: IdentityService; provider: Provider; config: Config }): Promise<void> {
  const handle = provider.callback() as (req: IncomingMessage, res: ServerResponse) => void;
  const publicUrl = new URL(provider.issuer);
  const trustProxy = trustedProxy.get(provider) ?? false;

  // Everything under /idp that is not a sign-in page goes to the provider, before Fastify reads
  // the body (the provider parses its own form bodies).
  const forward = (req: FastifyRequest, reply: FastifyReply) => {
    reply.hijack();
    const raw = req.raw as IncomingMessage & { originalUrl?: string };
    raw.originalUrl = raw.url;
    raw.url = raw.url!.slice(IDP_PREFIX.length) || '/';
    // The provider presents itself at PUBLIC_URL whatever Host/X-Forwarded-* the client sent
    // (endpoint URLs, cookie `secure` flag); client addresses only from a trusted proxy.
    raw.headers['x-forwarded-host'] = publicUrl.host;
    raw.headers['x-forwarded-proto'] = publicUrl.protocol.slice(0, -1);
    if (!trustProxy) delete raw.headers['x-forwarded-for'];
    reply.raw.setHeader('x-request-id', String(req.id));
    handle(raw, reply.raw);
  };
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: `${IDP_PREFIX}/*`,
    schema: { hide: true },
    // The provider answers CORS itself (discovery and JWKS to any origin; clientBasedCORS below).
    config: { rateLimit: false, cors: false },
    onRequest: async (req, reply) => forward(req, reply),
    handler: async () => undefined,
  });
  await app.register(mcpAuthorizationRoutes, { config, provider, forward });
  await app.register(userinfoRoutes, { identity, path: `${IDP_PREFIX}${IDP_ROUTES.userinfo}` });

  await app.register(async (pages) => {
    if (!pages.hasContentTypeParser('application/x-www-form-urlencoded')) {
      pages.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
        done(null, Object.fromEntries(new URLSearchParams(body as string)));
      });
    }
    const r = pages.withTypeProvider<TypeBoxTypeProvider>();
    const hide = true;

    /** The interaction of this request, checked against the `uid` in the URL (CSRF). */
    const interaction = async (req: { raw: IncomingMessage; params: { uid: string } }, res: ServerResponse) => {
      let details;
      try {
        details = await provider.interactionDetails(req.raw, res);
      } catch {
        throw new PageError(400, { error: 'invalid_request', error_description: 'This sign-in request has expired or was already completed.' });
      }
      if (details.uid !== req.params.uid) throw new PageError(400, { error: 'invalid_request', error_description: 'This sign-in request does not belong to this browser.' });
      return details;
    };

    pages.setErrorHandler((err, _req, reply) => {
      if (err instanceof PageError) return reply.code(err.status).headers(PAGE_HEADERS).send(errorPage(err.out));
      throw err;
    });

    r.get(`${IDP_PREFIX}/interaction/:uid`, { schema: { hide, params: InteractionParams } }, async (req, reply) => {
      const details = await interaction(req, reply.raw);
      const firstParty = details.params.client_id === config.auth.clientId;
      if (details.prompt.name === 'login') {
        const clientName = firstParty ? 'Agent Platform' : await clientNameOf(provider, String(details.params.client_id));
        return reply.headers(PAGE_HEADERS).send(loginPage({ uid: details.uid, clientName, email: String(details.params.login_hint ?? '') }));
      }
      // Consent: implicit for the first-party client; a registered client needs the user's Allow.
      if (!firstParty) return reply.headers(PAGE_HEADERS).send(await consentPage(provider, details));
      return grantAndContinue(provider, req.raw, reply, details);
    });

    r.post(`${IDP_PREFIX}/interaction/:uid/login`, { schema: { hide, params: InteractionParams, body: LoginForm } }, async (req, reply) => {
      const details = await interaction(req, reply.raw);
      if (details.prompt.name !== 'login') throw new PageError(400, { error: 'invalid_request', error_description: 'This sign-in request is not waiting for a password.' });
      let user;
      try {
        user = await identity.checkPassword(req.body.email, req.body.password);
      } catch (err) {
        if (err instanceof AppError && err.code === 'invalid_credentials') {
          return reply
            .code(401)
            .headers(PAGE_HEADERS)
            .send(loginPage({ uid: details.uid, clientName: 'Agent Platform', email: req.body.email, error: 'Email or password is wrong.' }));
        }
        throw err;
      }
      const to = await provider.interactionResult(req.raw, reply.raw, { login: { accountId: user.id } }, { mergeWithLastSubmission: false });
      return reply.code(303).header('location', to).header('cache-control', 'no-store').send();
    });

    r.post(`${IDP_PREFIX}/interaction/:uid/abort`, { schema: { hide, params: InteractionParams } }, async (req, reply) => {
      await interaction(req, reply.raw);
      const to = await provider.interactionResult(
        req.raw,
        reply.raw,
        { error: 'access_denied', error_description: 'The user cancelled the sign-in' },
        { mergeWithLastSubmission: false },
      );
      return reply.code(303).header('location', to).header('cache-control', 'no-store').send();
    });
  });
}

/** An error shown as an HTML page (the sign-in pages are for browsers, not API clients). */
class PageError extends Error {
  constructor(
    readonly status: number,
    readonly out: { error: string; error_description?: string },
  ) {
    super(out.error_description ?? out.error);
  }
}
