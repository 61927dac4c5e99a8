/**
 * Where the embedded tenant lives (`/idp` and its endpoint paths), its OpenID Connect scopes and
 * the API's resource indicator — shared by the mount (idp.ts), the provider (idp-provider.ts) and
 * the login flow (login-flow.ts).
 */

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

/** OpenID Connect scopes of the tenant (the API's own scopes come from `AUTH_SCOPE`). */
export const OIDC_SCOPES = ['openid', 'profile', 'email', 'offline_access'];
