/**
 * The console's only way to the platform: the typed SDK (`@agent-platform/sdk`, generated from the
 * platform's /openapi.json) on the same origin, as a browser session — the access token lives in
 * the SDK's memory storage, the refresh token is the HttpOnly cookie the platform sets on
 * `/v1/auth/session` (spec "Authentication" 8: never in browser storage). The SDK renews the access
 * token through that cookie before it expires and once on a 401 `token_expired`.
 */
import {
  AgentPlatform,
  AgentPlatformError,
  type CursorList,
  type TokenSet,
  type TokenStorage,
} from '@agent-platform/sdk';

export { AgentPlatformError };
export type { Body, Item, Query, Result } from '@agent-platform/sdk';

const ended = new Set<() => void>();

/**
 * Call `listener` when the session ends without the person signing out here: the platform refused
 * to renew the access token (the cookie's refresh token expired or was revoked — e.g. a sign-out
 * in another tab), or answered a request 401. Returns the unsubscribe function.
 */
export function onSessionEnded(listener: () => void): () => void {
  ended.add(listener);
  return () => ended.delete(listener);
}

/** Tell the listeners of {@link onSessionEnded}. */
function sessionEnded(): void {
  for (const l of ended) l();
}

/**
 * Whether this browser has signed in to the console and not signed out since: a hint in
 * localStorage (no secret: the value is `1`), so a first visit shows the sign-in page without
 * asking the platform to renew a session that cannot exist (a 401 in the browser's console on
 * every first load). The session itself is the HttpOnly cookie, which JavaScript cannot see; a
 * hint that outlived it (the cookie expired or was revoked elsewhere) costs one refused renewal.
 */
const SESSION_HINT = 'console.signed-in';
const hint = {
  get: () => localStorage.getItem(SESSION_HINT) === '1',
  set: (on: boolean) => (on ? localStorage.setItem(SESSION_HINT, '1') : localStorage.removeItem(SESSION_HINT)),
};

/**
 * The access token's only home: this page's memory (spec "Authentication" 8). The SDK empties it
 * when the platform refuses a renewal (a 4xx from `POST /v1/auth/session/refresh`): the session is over.
 */
class SessionTokens implements TokenStorage {
  private tokens: TokenSet | null = null;
  /** True while the person signs out here (no "session ended" notice then). */
  signingOut = false;
  get(): TokenSet | null {
    return this.tokens;
  }
  set(tokens: TokenSet | null): void {
    const had = this.tokens !== null;
    this.tokens = tokens;
    if (had && !tokens) hint.set(false);
    if (had && !tokens && !this.signingOut) sessionEnded();
  }
}
const tokens = new SessionTokens();

/** The client every page uses. 429/503 are retried once (a person is waiting). */
export const client = new AgentPlatform({
  baseUrl: window.location.origin,
  browserSession: true,
  env: {},
  tokenStorage: tokens,
  retry: { maxRetries: 1, maxDelayMs: 5_000 },
});

/**
 * What a failed call means for the session: a 401 that the SDK could not recover (it renews an
 * expired token once by itself) means the person is no longer signed in.
 */
export function noteError(e: unknown): void {
  if (e instanceof AgentPlatformError && e.status === 401 && tokens.get() !== null) tokens.set(null);
}

/** Tabs of the console tell each other about a sign-out (the others' access tokens would otherwise live on in their memory). */
const tabs = typeof BroadcastChannel === 'undefined' ? null : new BroadcastChannel('agent-platform-console-session');
tabs?.addEventListener('message', (m) => {
  if (m.data === 'signed-out') tokens.set(null);
});

/** Sign out here: the platform revokes the cookie's refresh token; the SDK forgets the access token. */
export async function signOut(): Promise<void> {
  tokens.signingOut = true;
  try {
    await client.auth.endSession();
  } finally {
    tokens.signingOut = false;
    hint.set(false);
    tabs?.postMessage('signed-out');
  }
}

/** Where the tenant sends the browser back after sign-in (always an allowed redirect URI of the platform). */
export const callbackUri = () => `${window.location.origin}/console/callback`;

/** Where an upstream's consent page sends the browser back after connecting an account (docs/connections.md). */
export const connectionsReturnUri = () => `${window.location.origin}/console/connections`;

const RETURN_KEY = 'console.return-path';

/** Steps 1–2 of the login: ask the platform for the tenant's URL and go there; `returnPath` (a console route) is where the person lands afterwards. */
export async function startSignIn(returnPath = '/'): Promise<void> {
  // A route of this console only (never a URL): kept in sessionStorage for the round trip, it is no secret.
  sessionStorage.setItem(RETURN_KEY, returnPath.startsWith('/') && !returnPath.startsWith('//') ? returnPath : '/');
  const start = await client.auth.startLogin(callbackUri());
  window.location.assign(start.auth_url);
}

/** Step 5 for a browser: the platform exchanges the code and sets the session cookie; the SDK keeps the access token. */
export async function completeSignIn(code: string, state: string, iss: string | null): Promise<void> {
  await client.auth.startSession({ code, state, redirect_uri: callbackUri(), ...(iss ? { iss } : {}) });
  hint.set(true);
}

/** The console route to land on after sign-in (once), `/` by default. */
export function takeReturnPath(): string {
  const path = sessionStorage.getItem(RETURN_KEY);
  sessionStorage.removeItem(RETURN_KEY);
  return path && path !== '/callback' ? path : '/';
}

/**
 * Restore the session from the cookie on page load: false when there is none (or it was revoked).
 * Without the sign-in hint nothing is asked: there is no session to restore.
 */
export async function restoreSession(): Promise<boolean> {
  if (!hint.get()) return false;
  try {
    await client.auth.refresh();
    return true;
  } catch (e) {
    if (e instanceof AgentPlatformError && (e.status === 401 || e.status === 403)) {
      hint.set(false);
      return false;
    }
    throw e;
  }
}

/** Up to `max` items of a cursor list (the pages it takes). */
export function all<T>(list: CursorList<T>, max = 200): Promise<T[]> {
  return list.toArray(max);
}
