/**
 * The redirect-URI policy of the login flow, shared by `GET /v1/auth/login` and the embedded
 * OpenID Provider's client: the `AUTH_REDIRECT_URIS` allow-list (exact match), or — when the list
 * is empty — any loopback http(s) URI, any port and path (RFC 8252 §7.3 and §8.3).
 */

const LOOPBACK_NAMES = new Set(['localhost', '[::1]']);

function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_NAMES.has(hostname) || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** The web console's own callback (`<PUBLIC_URL>/console/callback`): always an allowed redirect URI. */
export function consoleRedirectUri(publicUrl: string): string {
  return `${publicUrl}/console/callback`;
}

/**
 * The web console's connected-accounts page (`<PUBLIC_URL>/console/connections`): always an allowed
 * `return_to` of `POST /connections`, where the platform's callback sends the browser back.
 */
export function consoleConnectionsUri(publicUrl: string): string {
  return `${publicUrl}/console/connections`;
}

/**
 * Why `uri` is not acceptable, or null when it is. `alwaysAllowed` (the platform's own console
 * callback) is accepted besides the allow-list or the loopback rule.
 */
export function redirectUriProblem(
  uri: string,
  allowList: readonly string[],
  alwaysAllowed: readonly string[] = [],
): string | null {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return 'redirect_uri is not an absolute URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'redirect_uri must be an http or https URL';
  if (u.hash || uri.includes('#')) return 'redirect_uri must not contain a fragment (RFC 6749 §3.1.2)';
  if (u.username || u.password) return 'redirect_uri must not contain credentials';
  if (alwaysAllowed.includes(uri)) return null;
  if (allowList.length > 0) {
    return allowList.includes(uri) ? null : 'redirect_uri is not on the allow-list (AUTH_REDIRECT_URIS)';
  }
  return isLoopbackHost(u.hostname)
    ? null
    : 'redirect_uri must be a loopback URI (localhost, 127.0.0.1 or [::1]) unless AUTH_REDIRECT_URIS allows it';
}

/** True when `uri` passes {@link redirectUriProblem}. */
export function isRedirectUriAllowed(
  uri: string,
  allowList: readonly string[],
  alwaysAllowed: readonly string[] = [],
): boolean {
  return redirectUriProblem(uri, allowList, alwaysAllowed) === null;
}
