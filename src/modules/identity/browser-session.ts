/**
 * Browser sessions for first-party web apps (the console): the spec's 5-step login where the
 * refresh token never reaches JavaScript (spec "Authentication" 8: not in browser storage).
 *
 * - `POST /v1/auth/session` — step 4 for a browser: exchanges `code` + `state` like
 *   `POST /v1/auth/callback`, but answers only the access token and puts the refresh token in an
 *   `HttpOnly; Secure; SameSite=Strict` cookie scoped to `/v1/auth/session`.
 * - `POST /v1/auth/session/refresh` — rotates the cookie's refresh token, answers a new access token.
 * - `DELETE /v1/auth/session` — sign-out: revokes the refresh token (RFC 7009 at the provider, or the
 *   platform token family) and clears the cookie.
 *
 * CSRF: the cookie is SameSite=Strict and only sent to these three paths; requests that carry an
 * `Origin` must come from `PUBLIC_URL`'s origin (a cross-site page cannot forge one).
 */
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import { operations } from '../../http/operations.js';
import { PUBLIC_SECURITY, errorResponses } from '../../http/schemas.js';
import type { LoginFlow } from './login-flow.js';
import type { IdentityService } from './service.js';
import { CallbackBody } from './schemas.js';

/** Name of the refresh-token cookie. */
export const REFRESH_COOKIE = 'ap_refresh';
const COOKIE_PATH = '/v1/auth/session';

/** What a browser gets: the access token only (RFC 6749 §5.1 fields minus `refresh_token`). */
const BrowserTokenSet = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  id_token: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String()),
  user_id: Type.String(),
});

interface Deps {
  ctx: AppContext;
  identity: IdentityService;
  login: LoginFlow;
}

/** Register the browser-session routes (own scope: the cookie parser stays local to them). */
export async function browserSessionRoutes(app: FastifyInstance, { ctx, identity, login }: Deps): Promise<void> {
  await app.register(cookie);
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const op = operations(['auth'], PUBLIC_SECURITY);
  const publicOrigin = new URL(ctx.config.publicUrl).origin;

  const checkOrigin = (req: FastifyRequest) => {
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== publicOrigin)
      throw new AppError('forbidden', `Origin ${origin} may not use the browser session (only ${publicOrigin})`);
  };
  const setCookie = (reply: FastifyReply, token: string | undefined) => {
    if (!token) return;
    reply.setCookie(REFRESH_COOKIE, token, {
      httpOnly: true,
      secure: true,
      sameSite: 'strict',
      path: COOKIE_PATH,
      maxAge: ctx.config.auth.refreshTokenTtlSeconds,
    });
  };
  const clearCookie = (reply: FastifyReply) =>
    reply.clearCookie(REFRESH_COOKIE, { httpOnly: true, secure: true, sameSite: 'strict', path: COOKIE_PATH });
  const withoutRefresh = <T extends { refresh_token?: string; user_id?: string }>(set: T, userId: string) => {
    const { refresh_token: _drop, ...rest } = set;
    return { ...rest, user_id: userId } as Omit<T, 'refresh_token'> & { user_id: string };
  };
  const userIdOf = async (accessToken: string) => (await identity.resolveAccessToken(accessToken, undefined)).subject;

  r.post(
    '/v1/auth/session',
    op(
      'auth.session.create',
      'Browser sign-in (step 4): exchange the code; the refresh token goes into an HttpOnly cookie, not the body',
      {
        body: CallbackBody,
        response: { 200: BrowserTokenSet, ...errorResponses(403, 502, 503) },
      },
    ),
    async (req, reply) => {
      checkOrigin(req);
      reply.header('cache-control', 'no-store');
      const set = await login.complete(req.body);
      setCookie(reply, set.refresh_token);
      return withoutRefresh(set, set.user_id);
    },
  );

  r.post(
    '/v1/auth/session/refresh',
    op('auth.session.refresh', "Rotate the session cookie's refresh token and return a new access token", {
      response: { 200: BrowserTokenSet, ...errorResponses(403) },
    }),
    async (req, reply) => {
      checkOrigin(req);
      reply.header('cache-control', 'no-store');
      const token = req.cookies[REFRESH_COOKIE];
      if (!token) throw new AppError('invalid_token', 'No browser session: sign in again');
      try {
        if (token.startsWith('rt_')) {
          const set = await identity.refreshPlatformToken(token);
          setCookie(reply, set.refresh_token);
          return withoutRefresh(set, await userIdOf(set.access_token));
        }
        const set = await login.refresh(token);
        setCookie(reply, set.refresh_token);
        return withoutRefresh(set, set.user_id);
      } catch (err) {
        clearCookie(reply);
        throw err;
      }
    },
  );

  r.delete(
    '/v1/auth/session',
    op('auth.session.delete', 'Sign out: revoke the refresh token (RFC 7009) and clear the session cookie', {
      response: { 204: Type.Null(), ...errorResponses(403) },
    }),
    async (req, reply) => {
      checkOrigin(req);
      const token = req.cookies[REFRESH_COOKIE];
      if (token) {
        if (token.startsWith('rt_')) await identity.revokePlatformRefreshToken(token);
        else await login.revoke(token);
      }
      clearCookie(reply);
      return reply.code(204).send(null);
    },
  );
}
