/**
 * The embedded OpenID Provider itself (`oidc-provider`), built by {@link createEmbeddedIdp} on the
 * first request under `/idp` (idp.ts): importing and configuring the provider is a sizeable part of
 * a start-up that most processes never need before a user signs in. See idp.ts for the
 * tenant's contract.
 */
import { hkdfSync } from 'node:crypto';
import Provider, { errors as oidcErrors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { AppContext } from '../../context.js';
import { DbAdapter } from './idp-adapter.js';
import { clientIdMetadataDocumentSettings } from './idp-cimd.js';
import { MCP_SCOPE, mcpResourceServerInfo, registrationSettings } from './idp-mcp.js';
import { errorPage, PAGE_HEADERS } from './idp-pages.js';
import { IDP_PREFIX, IDP_ROUTES, OIDC_SCOPES, resourceIndicatorFor } from './idp-endpoints.js';
import { loadOrCreateSecret } from './keys.js';
import { webPicture } from './picture.js';
import { consoleRedirectUri, isRedirectUriAllowed } from './redirect-uris.js';
import type { IdentityService } from './service.js';

/** Build the embedded provider (not yet mounted: see {@link idpRoutes}). */
export async function createEmbeddedIdp(ctx: AppContext, identity: IdentityService): Promise<Provider> {
  const auth = ctx.config.auth;
  const issuer = identity.platformIssuer;
  const clientId = auth.clientId;
  const indicator = resourceIndicatorFor(auth.audience);
  const apiScope = auth.scope;
  const cookieSecret = await loadOrCreateSecret(ctx.db, 'idp_cookie_secret');
  const cookieKey = Buffer.from(
    hkdfSync('sha256', cookieSecret, Buffer.alloc(0), 'agent-platform idp cookies v1', 32),
  ).toString('base64url');
  // MCP clients register themselves (RFC 7591) and ask for the /mcp resource (idp-mcp.ts).
  const { registration, extraClientMetadata } = registrationSettings(oidcErrors);
  // …or name themselves by the https URL of their metadata document (idp-cimd.ts).
  const cimd = clientIdMetadataDocumentSettings(ctx, oidcErrors);

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
    // Every fetch the provider makes (metadata documents, a client's jwks_uri) goes through the
    // platform's guarded HTTP client, with per-purpose body limits.
    fetch: cimd.fetch,
    fetchResponseBodyLimits: cimd.fetchResponseBodyLimits,
    features: {
      registration,
      clientIdMetadataDocument: cimd.feature,
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
          picture: webPicture(u.picture),
          updated_at: Math.floor(u.updatedAt.getTime() / 1000),
        }),
      };
    },
    async extraTokenClaims(_ctx, token) {
      if (token.kind !== 'AccessToken' || !('accountId' in token) || typeof token.accountId !== 'string')
        return undefined;
      const u = await identity.findUser(token.accountId);
      return u ? { roles: u.roles, email: u.email ?? undefined } : undefined;
    },
    // First-party client: consent is implicit, so grant what it asks for (no consent page).
    async loadExistingGrant(kctx: KoaContextWithOIDC) {
      const oidc = kctx.oidc;
      const client = oidc.client!;
      const session = oidc.session!;
      const grantId =
        (oidc.result?.consent as { grantId?: string } | undefined)?.grantId ?? session.grantIdFor(client.clientId);
      let grant = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
      if (client.clientId !== clientId) return grant;
      if (!grant || grant.accountId !== session.accountId)
        grant = new oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      const requested = String(oidc.params?.scope ?? '')
        .split(' ')
        .filter(Boolean);
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

  // Redirect URIs of the first-party client follow the platform's policy (allow-list, or any
  // loopback URI per RFC 8252 §7.3), not only the registered list.
  const Client = provider.Client as unknown as {
    prototype: { redirectUriAllowed(this: { clientId: string }, uri: string): boolean };
  };
  const registered = Client.prototype.redirectUriAllowed;
  Client.prototype.redirectUriAllowed = function (this: { clientId: string }, uri: string) {
    if (this.clientId === clientId)
      return isRedirectUriAllowed(uri, auth.redirectUris, [consoleRedirectUri(ctx.config.publicUrl)]);
    return registered.call(this, uri);
  };

  provider.on('server_error', (_kctx: unknown, err: Error) => ctx.log.error({ err }, 'identity provider error'));

  return provider;
}
