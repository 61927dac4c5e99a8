/** `auth` (spec "Authentication", login flow in 5 steps), `apiKeys` and `admin` groups. */
import type { Authenticator } from '../credentials.js';
import { type Body, type Core, type Item, type Query, cursorList, unwrap } from '../core.js';
import { fromTokenResponse } from '../tokens.js';

/** Sign-in, tokens and the caller's profile. Methods that return tokens also store them in the client. */
export class AuthResource {
  constructor(
    private readonly core: Core,
    private readonly authenticator: Authenticator,
  ) {}

  /** Identity provider configuration (`GET /v1/auth/config`). */
  config() {
    return unwrap(this.core.http.GET('/v1/auth/config'));
  }

  /** Login step 1: the `auth_url` to open and the `state` (`GET /v1/auth/login`). `redirectUri` must be allowed by the server (loopback per RFC 8252 is). */
  startLogin(redirectUri: string) {
    return unwrap(this.core.http.GET('/v1/auth/login', { params: { query: { redirect_uri: redirectUri } } }));
  }

  /** Login step 5: exchange the code for tokens (`POST /v1/auth/callback`); the client then uses them. */
  async callback(body: Body<'auth.callback'>) {
    const set = await unwrap(this.core.http.POST('/v1/auth/callback', { body }));
    await this.authenticator.useTokens(fromTokenResponse(set));
    return set;
  }

  /**
   * Login step 5 for a browser session (`POST /v1/auth/session`, client option `browserSession`):
   * the platform exchanges the code, keeps the refresh token in its HttpOnly cookie and answers
   * the access token, which the client then uses.
   */
  async startSession(body: Body<'auth.session.create'>) {
    const set = await unwrap(this.core.http.POST('/v1/auth/session', { body }));
    await this.authenticator.useTokens(fromTokenResponse(set));
    return set;
  }

  /** Sign out of a browser session (`DELETE /v1/auth/session`): the platform revokes the refresh token and clears its cookie; the client forgets its tokens. */
  async endSession(): Promise<void> {
    try {
      await unwrap(this.core.http.DELETE('/v1/auth/session'));
    } finally {
      await this.authenticator.useTokens(null);
    }
  }

  /** Register a user of the pre-configured tenant (`POST /auth/register`, 201 profile). */
  register(body: Body<'auth.register'>) {
    return unwrap(this.core.http.POST('/auth/register', { body }));
  }

  /** Email + password login (`POST /auth/login`); the client then uses the tokens. */
  async login(body: Body<'auth.login'>) {
    const set = await unwrap(this.core.http.POST('/auth/login', { body }));
    await this.authenticator.useTokens(fromTokenResponse(set));
    return set;
  }

  /** A test token (`POST /auth/test`; servers outside production, or with `AUTH_TEST_TOKENS=on`); the client then uses it. */
  async testToken(body: Body<'auth.test'> = {}) {
    const set = await unwrap(this.core.http.POST('/auth/test', { body }));
    await this.authenticator.useTokens(fromTokenResponse(set));
    return set;
  }

  /** Exchange the stored refresh token (or the browser session's cookie) for new tokens now (the client also does this by itself). @throws AgentPlatformError 401 when there is no session */
  refresh() {
    return this.authenticator.renew();
  }

  /** Forget the stored tokens (the server keeps no session to end). */
  logout() {
    return this.authenticator.useTokens(null);
  }

  /** Validate the client's access token (`POST /v1/auth/validate`). */
  validate() {
    return unwrap(this.core.http.POST('/v1/auth/validate'));
  }

  /** The current user (`GET /v1/auth/me`). */
  me() {
    return unwrap(this.core.http.GET('/v1/auth/me'));
  }

  /** Update name and preferences (`PUT /v1/auth/profile`). */
  updateProfile(body: Body<'auth.updateProfile'>) {
    return unwrap(this.core.http.PUT('/v1/auth/profile', { body }));
  }
}

/** API keys of the caller (`/api-keys`); the secret is in the create answer only. */
export class ApiKeysResource {
  constructor(private readonly core: Core) {}

  /** Every key, newest first (cursor list). */
  list(query: Omit<Query<'apiKeys.list'>, 'cursor'> = {}) {
    return cursorList<Item<'apiKeys.list'>>((cursor) =>
      unwrap(this.core.http.GET('/api-keys', { params: { query: { ...query, cursor } } })),
    );
  }

  /** Create a key; `key` in the answer is shown once. */
  create(body: Body<'apiKeys.create'>) {
    return unwrap(this.core.http.POST('/api-keys', { body }));
  }

  /** Revoke a key (effective immediately). */
  async revoke(id: string): Promise<void> {
    await unwrap(this.core.http.DELETE('/api-keys/{id}', { params: { path: { id } } }));
  }
}

/** Operator routes (role `admin`). */
export class AdminResource {
  constructor(private readonly core: Core) {}

  /** Replace a user's roles (`PUT /admin/users/{id}/roles`). */
  setUserRoles(userId: string, body: Body<'admin.setUserRoles'>) {
    return unwrap(this.core.http.PUT('/admin/users/{id}/roles', { params: { path: { id: userId } }, body }));
  }
}
