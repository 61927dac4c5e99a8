/**
 * Token storage. The SDK keeps tokens in memory by default and never in `localStorage` (spec
 * "Authentication" 8: tokens in memory or an httpOnly cookie, never web storage); pass another
 * {@link TokenStorage} (the CLI stores them in a 0600 file) to keep them elsewhere.
 */

/** A user's or an agent's tokens. `expiresAt` is the access token's expiry, ms since the epoch. */
export interface TokenSet {
  accessToken: string;
  refreshToken?: string;
  expiresAt?: number;
}

/** Where the client reads and writes its tokens. Either method may be async. */
export interface TokenStorage {
  get(): TokenSet | null | Promise<TokenSet | null>;
  /** Replace the stored tokens; `null` forgets them (logout, refresh refused). */
  set(tokens: TokenSet | null): void | Promise<void>;
}

/** The default storage: a variable in this process/page. */
export class MemoryTokenStorage implements TokenStorage {
  private tokens: TokenSet | null;
  constructor(initial: TokenSet | null = null) {
    this.tokens = initial;
  }
  get(): TokenSet | null {
    return this.tokens;
  }
  set(tokens: TokenSet | null): void {
    this.tokens = tokens;
  }
}

/**
 * The `exp` claim of a JWT (RFC 7519 §4.1.4) in ms since the epoch, read without verifying the
 * signature (the server verifies; the client only schedules its refresh). Undefined for opaque tokens.
 */
export function jwtExpiry(token: string): number | undefined {
  const part = token.split('.')[1];
  if (!part) return undefined;
  try {
    const json = atob(
      part
        .replace(/-/g, '+')
        .replace(/_/g, '/')
        .padEnd(Math.ceil(part.length / 4) * 4, '='),
    );
    const exp = (JSON.parse(json) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** A token set from an OAuth token response (`expires_in` in seconds, RFC 6749 §5.1). */
export function fromTokenResponse(
  body: { access_token: string; refresh_token?: string | null; expires_in?: number | null },
  previousRefresh?: string,
  now = Date.now(),
): TokenSet {
  const expiresAt = typeof body.expires_in === 'number' ? now + body.expires_in * 1000 : jwtExpiry(body.access_token);
  const refreshToken = body.refresh_token ?? previousRefresh;
  return {
    accessToken: body.access_token,
    ...(refreshToken ? { refreshToken } : {}),
    ...(expiresAt ? { expiresAt } : {}),
  };
}
