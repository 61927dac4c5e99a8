/**
 * The console's only way to the platform: its public HTTP API, same origin.
 * The access token lives in this module's memory; the refresh token is an HttpOnly cookie the
 * platform sets on `/v1/auth/session` (spec "Authentication" 8: never in browser storage).
 */

/** A problem+json answer (RFC 9457) as the platform sends it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: Array<{ pointer?: string; message?: string }> = [],
    readonly requestId?: string,
  ) {
    super(detail || code);
  }
}

let accessToken: string | null = null;
let refreshing: Promise<boolean> | null = null;

/** Where the tenant sends the browser back (always an allowed redirect URI of the platform). */
export const callbackUri = () => `${window.location.origin}/console/callback`;

async function parse(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function toError(res: Response): Promise<ApiError> {
  const body = (await parse(res)) as Record<string, unknown> | string | null;
  if (body && typeof body === 'object') {
    return new ApiError(res.status, String(body.code ?? 'error'), String(body.detail ?? body.title ?? res.statusText), (body.errors as ApiError['errors']) ?? [], res.headers.get('x-request-id') ?? undefined);
  }
  return new ApiError(res.status, 'error', typeof body === 'string' && body ? body : res.statusText);
}

/** Exchange the session cookie for a new access token; false when there is no (valid) session. */
export function refreshSession(): Promise<boolean> {
  refreshing ??= (async () => {
    try {
      const res = await fetch('/v1/auth/session/refresh', { method: 'POST', credentials: 'same-origin' });
      if (!res.ok) {
        accessToken = null;
        return false;
      }
      accessToken = ((await res.json()) as { access_token: string }).access_token;
      return true;
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

/**
 * Call the API: JSON in, JSON out, bearer token attached. A 401 `token_expired` refreshes the
 * session once and retries. @throws ApiError for every non-2xx answer.
 */
export async function api<T = any>(method: string, path: string, body?: unknown, init: { form?: FormData } = {}): Promise<T> {
  const send = () =>
    fetch(path, {
      method,
      credentials: 'same-origin',
      headers: {
        ...(accessToken ? { authorization: `Bearer ${accessToken}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: init.form ?? (body !== undefined ? JSON.stringify(body) : undefined),
    });
  let res = await send();
  if (res.status === 401) {
    const err = await toError(res);
    if (err.code !== 'token_expired' || !(await refreshSession())) throw err;
    res = await send();
  }
  if (!res.ok) throw await toError(res);
  return (await parse(res)) as T;
}

/** Steps 1–2: ask the platform for the tenant's URL and go there. */
export async function startSignIn(): Promise<void> {
  const start = await api<{ auth_url: string; state: string }>('GET', `/v1/auth/login?redirect_uri=${encodeURIComponent(callbackUri())}`);
  window.location.assign(start.auth_url);
}

/** Step 4 for a browser: the platform exchanges the code and sets the session cookie. */
export async function completeSignIn(code: string, state: string, iss: string | null): Promise<void> {
  const set = await api<{ access_token: string }>('POST', '/v1/auth/session', { code, state, redirect_uri: callbackUri(), ...(iss ? { iss } : {}) });
  accessToken = set.access_token;
}

/** Sign out: the platform revokes the refresh token and clears the cookie. */
export async function signOut(): Promise<void> {
  await fetch('/v1/auth/session', { method: 'DELETE', credentials: 'same-origin' });
  accessToken = null;
}

/** Every page of a cursor list (`data`, `next_cursor`), up to `max` items. */
export async function listAll<T>(path: string, max = 200): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page: { data: T[]; next_cursor: string | null } = await api('GET', `${path}${sep}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    out.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor && out.length < max);
  return out;
}
