/**
 * `oauth2` upstream auth of a service (docs/manifest.md "auth", docs/connections.md):
 * the service calls its upstream with each caller's own OAuth 2.0 grant (a connection) instead of
 * one shared credential. This file checks the manifest block, pre-fills it from an OpenAPI
 * document's `securitySchemes` (RFC-less but OpenAPI 3.x §4.8.27 "OAuth Flows Object"), turns it
 * into stored columns (client secret AES-GCM encrypted, never returned) and back.
 */
import type { AppContext } from '../../context.js';
import type { OAuth2Settings } from '../../db/schema/index.js';
import type { services } from '../../db/schema/index.js';
import { decryptSecret, encryptSecret } from '../../lib/secrets.js';
import type { OAuth2Client } from '../../upstream/oauth2.js';
import type { Static } from 'typebox';
import type { AuthInput } from './schemas.js';

type Problem = { pointer: string; message: string };
type ServiceRow = typeof services.$inferSelect;
type UpstreamAuthInput = Static<typeof AuthInput>;

/** Manifest fields that only `oauth2` auth may carry. */
export const OAUTH2_FIELDS = [
  'issuer',
  'authorization_url',
  'token_url',
  'revocation_url',
  'scopes',
  'client_id',
  'client_secret',
  'token_endpoint_auth_method',
  'pkce',
  'token_placement',
  'audience',
  'resource',
] as const;

/** What an OpenAPI document says about an OAuth 2.0 authorization-code flow (endpoints, scopes). */
export interface OAuth2Prefill {
  issuer?: string;
  authorization_url?: string;
  token_url?: string;
  scopes: string[];
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** An endpoint URL must be absolute https (http on loopback only: RFC 6749 §3.1/§3.2 require TLS), without credentials or fragment. */
function endpointProblem(raw: string): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopbackHost(u.hostname)))
    return 'must be an https URL (http only on loopback)';
  if (u.username || u.password) return 'must not embed credentials';
  if (u.hash) return 'must not carry a fragment';
  return null;
}

/** Shape problems of an `oauth2` auth block at `base` (completeness is {@link checkOAuth2Complete}'s job, after pre-filling). */
export function checkOAuth2Fields(auth: UpstreamAuthInput, base: string): Problem[] {
  const out: Problem[] = [];
  if (auth.name !== undefined) out.push({ pointer: `${base}/name`, message: 'is not used by auth type oauth2' });
  if (auth.secret !== undefined)
    out.push({ pointer: `${base}/secret`, message: 'is not used by auth type oauth2 (use client_secret)' });
  if (!auth.client_id)
    out.push({
      pointer: `${base}/client_id`,
      message: 'is required for auth type oauth2 (the client the service registered at the upstream)',
    });
  for (const f of ['issuer', 'authorization_url', 'token_url', 'revocation_url'] as const) {
    const p = auth[f] === undefined ? null : endpointProblem(auth[f]);
    if (p) out.push({ pointer: `${base}/${f}`, message: p });
  }
  if (auth.resource !== undefined) {
    try {
      if (new URL(auth.resource).hash)
        out.push({ pointer: `${base}/resource`, message: 'must not carry a fragment (RFC 8707 §2)' });
    } catch {
      out.push({ pointer: `${base}/resource`, message: 'must be an absolute URI (RFC 8707 §2)' });
    }
  }
  if (auth.token_endpoint_auth_method && auth.token_endpoint_auth_method !== 'none' && !auth.client_secret) {
    out.push({
      pointer: `${base}/client_secret`,
      message: `is required for token_endpoint_auth_method ${auth.token_endpoint_auth_method}`,
    });
  }
  return out;
}

/** After pre-filling: endpoints known either way (`issuer`, or both URLs). */
export function checkOAuth2Complete(auth: UpstreamAuthInput | undefined, base: string): Problem[] {
  if (auth?.type !== 'oauth2' || auth.issuer || (auth.authorization_url && auth.token_url)) return [];
  const missing = (['authorization_url', 'token_url'] as const).filter((f) => !auth[f]);
  return missing.map((f) => ({
    pointer: `${base}/${f}`,
    message: 'is required for auth type oauth2 unless issuer is given (OpenID Connect discovery)',
  }));
}

/**
 * The first OAuth 2.0 authorization-code flow (or OpenID Connect scheme) among an OpenAPI
 * document's `components.securitySchemes`, or null.
 */
export function oauth2FromSecuritySchemes(schemes: unknown): OAuth2Prefill | null {
  if (!schemes || typeof schemes !== 'object') return null;
  for (const scheme of Object.values(schemes as Record<string, unknown>)) {
    const s = scheme as {
      type?: unknown;
      flows?: { authorizationCode?: Record<string, unknown> };
      openIdConnectUrl?: unknown;
    };
    const flow = s?.type === 'oauth2' ? s.flows?.authorizationCode : undefined;
    if (flow && typeof flow.authorizationUrl === 'string' && typeof flow.tokenUrl === 'string') {
      const scopes = flow.scopes && typeof flow.scopes === 'object' ? Object.keys(flow.scopes) : [];
      return { authorization_url: flow.authorizationUrl, token_url: flow.tokenUrl, scopes };
    }
  }
  for (const scheme of Object.values(schemes as Record<string, unknown>)) {
    const s = scheme as { type?: unknown; openIdConnectUrl?: unknown };
    if (s?.type === 'openIdConnect' && typeof s.openIdConnectUrl === 'string') {
      return { issuer: s.openIdConnectUrl.replace(/\/\.well-known\/openid-configuration$/, ''), scopes: ['openid'] };
    }
  }
  return null;
}

/** Fill the endpoints and scopes an `oauth2` block leaves out from the document's security scheme. */
export function prefillOAuth2(
  auth: UpstreamAuthInput | undefined,
  fromDoc: OAuth2Prefill | null,
): UpstreamAuthInput | undefined {
  if (auth?.type !== 'oauth2' || !fromDoc || auth.issuer || auth.authorization_url || auth.token_url) {
    return auth?.type === 'oauth2' && fromDoc && !auth.scopes ? { ...auth, scopes: fromDoc.scopes } : auth;
  }
  return { ...fromDoc, ...auth, scopes: auth.scopes ?? fromDoc.scopes };
}

/** The stored settings of a complete `oauth2` block (defaults applied). */
function settingsOf(a: UpstreamAuthInput): OAuth2Settings {
  return {
    ...(a.issuer ? { issuer: a.issuer } : {}),
    ...(a.authorization_url ? { authorization_url: a.authorization_url } : {}),
    ...(a.token_url ? { token_url: a.token_url } : {}),
    ...(a.revocation_url ? { revocation_url: a.revocation_url } : {}),
    scopes: [...new Set(a.scopes ?? [])],
    client_id: a.client_id!,
    token_endpoint_auth_method: a.token_endpoint_auth_method ?? (a.client_secret ? 'client_secret_basic' : 'none'),
    pkce: a.pkce ?? true,
    token_placement: a.token_placement ?? 'header',
    ...(a.audience ? { audience: a.audience } : {}),
    ...(a.resource ? { resource: a.resource } : {}),
  };
}

/**
 * The `services` auth columns of an auth block (secrets encrypted). `keptSecret`: the stored
 * client-secret blob an update without `client_secret` keeps.
 */
export function authColumns(ctx: AppContext, auth: UpstreamAuthInput | undefined, keptSecret?: string | null) {
  const type = auth?.type ?? 'none';
  if (type === 'oauth2') {
    return {
      authType: type,
      authName: null,
      authSecret: auth!.client_secret ? encryptSecret(ctx, auth!.client_secret) : (keptSecret ?? null),
      authOauth2: settingsOf(auth!),
    };
  }
  return {
    authType: type,
    authName: type === 'header' || type === 'query' ? auth!.name! : null,
    authSecret: type !== 'none' && auth?.secret ? encryptSecret(ctx, auth.secret) : null,
    authOauth2: null,
  };
}

/** The OAuth 2.0 client of an `oauth2` service row (client secret decrypted), or null. */
export function oauth2ClientOf(ctx: AppContext, svc: ServiceRow): OAuth2Client | null {
  if (svc.authType !== 'oauth2' || !svc.authOauth2) return null;
  return { settings: svc.authOauth2, clientSecret: svc.authSecret ? decryptSecret(ctx, svc.authSecret) : null };
}

/** The `oauth2` settings as shown to anyone (never the client secret). */
export function oauth2View(svc: ServiceRow): (OAuth2Settings & { has_client_secret: boolean }) | undefined {
  return svc.authType === 'oauth2' && svc.authOauth2
    ? { ...svc.authOauth2, has_client_secret: svc.authSecret !== null }
    : undefined;
}
