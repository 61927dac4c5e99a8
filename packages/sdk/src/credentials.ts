/**
 * How requests are authenticated: an API key (`X-API-Key`), a user's access token refreshed with
 * its refresh token (spec "Authentication" 4: `POST /v1/auth/refresh`, single-use refresh tokens),
 * a browser session whose refresh token is the platform's HttpOnly cookie (spec "Authentication" 8:
 * `POST /v1/auth/session/refresh`; the access token stays in memory), or an agent's client
 * credentials exchanged for access tokens at `POST /auth/agent/token` (RFC 6749 §4.4,
 * `client_secret_post`) and renewed before they expire.
 */
import { AgentPlatformError } from './errors.js';
import { fromTokenResponse, type TokenSet, type TokenStorage } from './tokens.js';

/** The credentials a client was configured with. */
export type Credentials =
  | { kind: 'apiKey'; apiKey: string }
  | { kind: 'user' }
  /** A first-party web app on the platform's origin: the refresh token is the `/v1/auth/session` cookie, invisible to scripts. */
  | { kind: 'session' }
  | { kind: 'client'; clientId: string; clientSecret: string; scope?: string };

/** Attaches credentials to requests and renews tokens; one per client. */
export class Authenticator {
  private renewing: Promise<TokenSet> | null = null;

  constructor(
    private credentials: Credentials,
    readonly storage: TokenStorage,
    private readonly opts: { baseUrl: string; fetch: typeof fetch; refreshSkewMs: number },
  ) {}

  get kind(): Credentials['kind'] {
    return this.credentials.kind;
  }

  /** Switch to user tokens (after a login): they go to the storage and the API key/client is dropped (a browser session stays one). */
  async useTokens(tokens: TokenSet | null): Promise<void> {
    if (this.credentials.kind !== 'session') this.credentials = { kind: 'user' };
    await this.storage.set(tokens);
  }

  /**
   * Set the `Authorization` or `X-API-Key` header of `headers`, renewing the token first when it
   * expires within the refresh skew. A request that already carries credentials is left alone.
   */
  async authorize(headers: Headers): Promise<void> {
    if (headers.has('authorization') || headers.has('x-api-key')) return;
    if (this.credentials.kind === 'apiKey') {
      headers.set('x-api-key', this.credentials.apiKey);
      return;
    }
    let tokens = await this.storage.get();
    // A browser session without tokens is signed out: requests go out anonymous (auth.refresh() restores one).
    const canRenew =
      this.credentials.kind === 'client' || !!tokens?.refreshToken || (this.credentials.kind === 'session' && !!tokens);
    const stale =
      !tokens || (tokens.expiresAt !== undefined && tokens.expiresAt - Date.now() < this.opts.refreshSkewMs);
    if (stale && canRenew) tokens = await this.renew();
    if (tokens) headers.set('authorization', `Bearer ${tokens.accessToken}`);
  }

  /**
   * After a 401 with `code`: renew once if that can help (an expired user token with a refresh
   * token; any token of client credentials). Returns whether the request should be retried.
   */
  async recover(code: string, sentAuthorization: string | null): Promise<boolean> {
    if (this.credentials.kind === 'apiKey' || !sentAuthorization) return false;
    if (this.credentials.kind === 'user' || this.credentials.kind === 'session') {
      if (code !== 'token_expired') return false;
      const tokens = await this.storage.get();
      if (!tokens || (this.credentials.kind === 'user' && !tokens.refreshToken)) return false;
      // Another request may have refreshed already: retry with the newer token.
      if (`Bearer ${tokens.accessToken}` !== sentAuthorization) return true;
    } else if (code !== 'token_expired' && code !== 'invalid_token') return false;
    await this.renew();
    return true;
  }

  /** Get fresh tokens (one exchange at a time; concurrent callers share it). @throws AgentPlatformError */
  renew(): Promise<TokenSet> {
    this.renewing ??= this.exchange().finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }

  private async exchange(): Promise<TokenSet> {
    const { baseUrl, fetch: doFetch } = this.opts;
    let res: Response;
    let previousRefresh: string | undefined;
    if (this.credentials.kind === 'client') {
      const form = new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: this.credentials.clientId,
        client_secret: this.credentials.clientSecret,
      });
      if (this.credentials.scope) form.set('scope', this.credentials.scope);
      res = await doFetch(`${baseUrl}/auth/agent/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
      });
    } else if (this.credentials.kind === 'session') {
      // The browser sends the cookie (same origin); the answer carries the access token only.
      res = await doFetch(`${baseUrl}/v1/auth/session/refresh`, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { accept: 'application/json' },
      });
    } else {
      previousRefresh = (await this.storage.get())?.refreshToken;
      if (!previousRefresh)
        throw new AgentPlatformError({
          status: 401,
          code: 'unauthenticated',
          detail: 'No refresh token: log in again',
        });
      res = await doFetch(`${baseUrl}/v1/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ refresh_token: previousRefresh }),
      });
    }
    if (!res.ok) {
      const err = await AgentPlatformError.fromFetchResponse(res);
      // A refused refresh token will never work again (single use, or revoked): forget it.
      if (
        (this.credentials.kind === 'user' || this.credentials.kind === 'session') &&
        res.status >= 400 &&
        res.status < 500
      )
        await this.storage.set(null);
      throw err;
    }
    const tokens = fromTokenResponse(
      (await res.json()) as { access_token: string; refresh_token?: string; expires_in?: number },
      previousRefresh,
    );
    await this.storage.set(tokens);
    return tokens;
  }
}
