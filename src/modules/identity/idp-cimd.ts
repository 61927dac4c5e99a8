/**
 * OAuth Client ID Metadata Documents on the embedded tenant (draft-ietf-oauth-client-id-metadata-
 * document; MCP authorization, revision 2025-11-25, "Client ID Metadata Documents"): an MCP client
 * with no prior relationship uses an https URL as its `client_id`, and the document at that URL is
 * its registration. Resolution is oidc-provider's own `clientIdMetadataDocument` feature
 * (`Client.find` fetches the document on a cache miss); this module sets its bounds and policy:
 *
 * - the fetch goes through the platform's guarded HTTP client (src/upstream/http.ts): addresses
 *   checked after DNS resolution (loopback only under `ALLOW_LOOPBACK_UPSTREAMS`, private and
 *   link-local never), redirects not followed, {@link FETCH_TIMEOUT_MS} in all, at most
 *   {@link DOCUMENT_MAX_BYTES} of body;
 * - documents are cached by oidc-provider (an LRU of 100 documents per process) for the response's
 *   `Cache-Control: max-age` / `Expires`, clamped to [{@link CACHE_MIN_SECONDS},
 *   `MCP_CLIENT_METADATA_CACHE_MAX_SECONDS`]; concurrent resolutions of one URL share one fetch;
 * - fetches (cache misses only) are budgeted per client IP and per process
 *   (`MCP_CLIENT_METADATA_FETCHES_PER_MINUTE`, ten times that per process), and one request
 *   fetches a URL at most once (failures are not cached);
 * - a document is validated by oidc-provider (its `client_id` equals the URL, no `client_secret`,
 *   no shared-secret authentication method, https web URIs, the client metadata schema) and then
 *   by {@link metadataDocumentClientProblem}: a public client (PKCE) or `private_key_jwt` with a
 *   `jwks_uri`, the code flow only, https or loopback redirect URIs — the policy dynamic
 *   registration applies too (idp-mcp.ts).
 *
 * Failures answer the authorization request with the OAuth error `invalid_client` (fetch refused,
 * failed or over budget) or `invalid_client_metadata` (a document that breaks the rules).
 */
import type { Configuration, KoaContextWithOIDC, errors as OidcErrors } from 'oidc-provider';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import { guardedFetch } from '../../upstream/http.js';
import { registeredRedirectUriProblem } from './idp-mcp.js';

/** Whole fetch of one document (connect, headers, body), ms — oidc-provider's own limit, kept. */
export const FETCH_TIMEOUT_MS = 2500;
/** Largest document accepted, bytes (oidc-provider's default: client metadata is small). */
export const DOCUMENT_MAX_BYTES = 5 * 1024;
/** Largest JWK Set fetched from a `jwks_uri` (a `private_key_jwt` client's keys), bytes. */
export const JWKS_MAX_BYTES = 64 * 1024;
/** Shortest caching of a document, seconds, whatever its headers say (`no-store` included): the DoS bound. */
export const CACHE_MIN_SECONDS = 60;
/** Length of one fetch-budget window, ms. */
const BUDGET_WINDOW_MS = 60_000;

/** Authentication methods a metadata-document client may use (no shared secret can exist). */
const AUTH_METHODS = new Set(['none', 'private_key_jwt']);
const GRANTS = new Set(['authorization_code', 'refresh_token']);

/**
 * A fixed-window budget of fetches: at most `perKey` per key (the requesting IP) and `total` in
 * all per window. Memory is bounded by `total` (a key is stored only when it spends).
 */
export class FetchBudget {
  private windowStart = 0;
  private spent = 0;
  private readonly byKey = new Map<string, number>();

  constructor(
    private readonly perKey: number,
    private readonly total: number,
    private readonly windowMs = BUDGET_WINDOW_MS,
  ) {}

  /** Spend one fetch for `key`; false when the key or the whole process is over budget this window. */
  take(key: string, now = Date.now()): boolean {
    if (now - this.windowStart >= this.windowMs) {
      this.windowStart = now;
      this.spent = 0;
      this.byKey.clear();
    }
    const used = this.byKey.get(key) ?? 0;
    if (used >= this.perKey || this.spent >= this.total) return false;
    this.byKey.set(key, used + 1);
    this.spent++;
    return true;
  }
}

/** The metadata of a document-resolved client that the policy reads (RFC 7591 §2 names). */
export interface MetadataDocumentClient {
  token_endpoint_auth_method?: string;
  jwks_uri?: string;
  jwks?: unknown;
  grant_types?: string[];
  response_types?: string[];
  redirect_uris?: string[];
}

/**
 * Why a client resolved from a metadata document is refused, or null: it must be public
 * (`token_endpoint_auth_method: none`, PKCE) or authenticate with `private_key_jwt` against keys
 * at a `jwks_uri` (never inline `jwks`: keys must be rotatable by the document's owner), use only
 * the authorization code and refresh token grants, and send users back to https or loopback
 * redirect URIs (RFC 8252 §7.3) — the same redirect rule as dynamic registration.
 */
export function metadataDocumentClientProblem(m: MetadataDocumentClient): string | null {
  const method = m.token_endpoint_auth_method ?? 'client_secret_basic';
  if (!AUTH_METHODS.has(method))
    return 'token_endpoint_auth_method must be "none" (PKCE) or "private_key_jwt" for a Client ID Metadata Document';
  if (method === 'private_key_jwt' && !m.jwks_uri)
    return 'a private_key_jwt client must publish its keys at a jwks_uri (inline jwks is not accepted)';
  if (m.jwks !== undefined) return 'jwks must not be inline in a Client ID Metadata Document: use jwks_uri';
  if (!(m.grant_types ?? ['authorization_code']).every((g) => GRANTS.has(g)))
    return 'grant_types may only hold authorization_code and refresh_token';
  if (!(m.response_types ?? ['code']).every((r) => r === 'code')) return 'response_types may only hold "code"';
  const uris = m.redirect_uris ?? [];
  if (uris.length === 0) return 'redirect_uris must list at least one URI';
  for (const uri of uris) {
    const problem = registeredRedirectUriProblem(uri);
    if (problem) return problem;
  }
  return null;
}

/** The requesting client's address as the provider sees it (the mount strips untrusted X-Forwarded-For). */
function requesterOf(kctx: KoaContextWithOIDC | undefined): string {
  return kctx?.ip || 'unknown';
}

/**
 * The provider settings for Client ID Metadata Documents (merged into the tenant's
 * configuration by idp-provider.ts): the feature with its fetch budget, cache bounds and client
 * policy, the provider's outbound `fetch` (the guarded client, for every fetch the provider makes),
 * and the body-size limits. `oidcErrors`: the provider's error classes.
 */
export function clientIdMetadataDocumentSettings(
  ctx: AppContext,
  oidcErrors: typeof OidcErrors,
): Pick<Configuration, 'fetch' | 'fetchResponseBodyLimits'> & {
  feature: NonNullable<NonNullable<Configuration['features']>['clientIdMetadataDocument']>;
} {
  const perIp = ctx.config.mcp.clientMetadataFetchesPerMinute;
  const budget = new FetchBudget(perIp, perIp * 10);
  const triedBy = new WeakMap<object, Set<string>>();
  const guarded = guardedFetch(ctx, { timeoutMs: FETCH_TIMEOUT_MS, maxResponseBytes: JWKS_MAX_BYTES });
  return {
    feature: {
      enabled: true,
      // The experimental feature's implemented draft, acknowledged (oidc-provider refuses to start
      // when an update changes it, instead of changing behaviour silently).
      ack: 'draft-02',
      allowFetch(kctx, clientId) {
        // One fetch per URL per request: after a failure the provider's error handler looks the
        // client up again (to decide where the error may go); that lookup must not fetch again.
        if (kctx) {
          const tried = triedBy.get(kctx) ?? new Set<string>();
          triedBy.set(kctx, tried);
          if (tried.has(clientId)) return false;
          tried.add(clientId);
        }
        const requester = requesterOf(kctx);
        if (budget.take(requester)) return true;
        ctx.log.warn({ requester, clientHost: new URL(clientId).host }, 'client metadata document fetch over budget');
        return false;
      },
      allowClient(_kctx, client) {
        const problem = metadataDocumentClientProblem(client.metadata() as MetadataDocumentClient);
        if (problem) throw new oidcErrors.InvalidClientMetadata(problem);
        return true;
      },
      cacheDuration: { min: CACHE_MIN_SECONDS, max: ctx.config.mcp.clientMetadataCacheMaxSeconds },
    },
    async fetch(input, init) {
      const url = input instanceof Request ? input.url : String(input);
      try {
        return await guarded(url, init);
      } catch (err) {
        if (err instanceof AppError)
          ctx.log.warn(
            { host: new URL(url).host, code: err.code, detail: err.message },
            'identity provider fetch refused',
          );
        throw err;
      }
    },
    fetchResponseBodyLimits: {
      'client_id metadata document': DOCUMENT_MAX_BYTES,
      jwks_uri: JWKS_MAX_BYTES,
      sector_identifier_uri: JWKS_MAX_BYTES,
    },
  };
}
