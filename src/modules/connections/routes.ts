/**
 * HTTP routes of the connections module (docs/connections.md).
 *
 * Two scopes: `/connections` (list, create, read, delete) for signed-in users (a grant is a
 * person's, so agents cannot create or read connections; they use their owner's at execution),
 * and the browser's `GET /connections/callback`, which carries no platform credential: it is
 * authenticated by the single-use `state` bound to the user and connection that started the flow,
 * and by the binding cookie that `POST /connections/authorize` (same user, signed in) set in the
 * browser that took the flow (`binding.ts`).
 */
import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { userOf } from '../../http/auth.js';
import { authScope, created, operations } from '../../http/operations.js';
import { IdParams, ListOf, PUBLIC_SECURITY, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import {
  AuthorizeConnectionBody,
  AuthorizedConnectionSchema,
  CallbackQuery,
  CallbackResultSchema,
  ConnectionListQuery,
  ConnectionSchema,
  CreateConnectionBody,
  CreatedConnectionSchema,
  DeletedConnectionSchema,
} from './schemas.js';
import { BINDING_COOKIE_PATH, takeAuthorization } from './binding.js';
import { completeConnection, deleteConnection, getConnection, listConnections, startConnection } from './service.js';

export async function connectionRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const tags = ['connections'];
  if (!app.hasRequestDecorator('cookies')) await app.register(cookie);
  const cookieOptions = { httpOnly: true, secure: true, sameSite: 'lax', path: BINDING_COOKIE_PATH } as const;

  await app.register(async (scope) => {
    const { r, op } = authScope(scope, ctx.auth, { principals: ['user'], tags: tags, security: USER_SECURITY });
    r.post(
      '/connections',
      op(
        'connections.create',
        "Connect the caller's account (or one of its agents') at an oauth2 service: returns the platform URL where the caller consents",
        {
          body: CreateConnectionBody,
          response: { 201: CreatedConnectionSchema, ...errorResponses(403, 404, 502) },
        },
      ),
      async (req, reply) => created(reply, startConnection(ctx, userOf(req).userId, req.body), { noStore: true }),
    );
    r.post(
      '/connections/authorize',
      op(
        'connections.authorize',
        "Take a connection flow in this browser: the upstream's consent URL, and the flow's binding cookie (only the user who started the flow)",
        {
          description:
            "Called by the page at `authorization_url` (the console) with the signed-in user's credential. Sets an HttpOnly, SameSite=Lax cookie that the callback requires, " +
            "so the flow can only be finished in this browser. Another user's flow answers 404 and changes nothing.",
          body: AuthorizeConnectionBody,
          response: { 200: AuthorizedConnectionSchema, ...errorResponses(400, 403, 404) },
        },
      ),
      async (req, reply) => {
        const { answer, cookie: binding } = await takeAuthorization(ctx, userOf(req).userId, req.body.state);
        reply
          .header('cache-control', 'no-store')
          .setCookie(binding.name, binding.value, { ...cookieOptions, maxAge: binding.maxAge });
        return answer;
      },
    );
    r.get(
      '/connections',
      op('connections.list', "The caller's connections, newest first", {
        querystring: ConnectionListQuery,
        response: { 200: ListOf(ConnectionSchema), ...errorResponses(403) },
      }),
      async (req) => listConnections(ctx, userOf(req).userId, req.query),
    );
    r.get(
      '/connections/:id',
      op('connections.get', 'One connection (never its tokens)', {
        params: IdParams,
        response: { 200: ConnectionSchema, ...errorResponses(403, 404) },
      }),
      async (req) => getConnection(ctx, userOf(req).userId, req.params.id),
    );
    r.delete(
      '/connections/:id',
      op('connections.delete', 'Revoke the grant at the upstream (RFC 7009, when it can) and delete the connection', {
        params: IdParams,
        response: { 200: DeletedConnectionSchema, ...errorResponses(403, 404) },
      }),
      async (req) => deleteConnection(ctx, userOf(req).userId, req.params.id),
    );
  });

  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get(
    '/connections/callback',
    operations(tags, PUBLIC_SECURITY)(
      'connections.callback',
      "The upstream's redirect after consent (authenticated by the single-use state and the browser's binding cookie, not by a token)",
      {
        description:
          'Refused (403 connection_not_bound) unless the browser carries the binding cookie of the flow (set by POST /connections/authorize). ' +
          'Exchanges the code and stores the tokens. With `return_to`, answers 303 to it with `connection_id` and `status`, or `error` and `error_description`. ' +
          'Without, answers the result as JSON (a failed authorization as a problem).',
        querystring: CallbackQuery,
        response: { 200: CallbackResultSchema, 303: { type: 'null' }, ...errorResponses(403, 404, 409, 502) },
      },
    ),
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      const out = await completeConnection(ctx, req.query, req.cookies);
      if (out.bindingCookie) reply.clearCookie(out.bindingCookie, cookieOptions);
      if (out.returnTo) {
        const to = new URL(out.returnTo);
        to.searchParams.set('connection_id', out.connectionId);
        to.searchParams.set('status', out.status);
        if (out.error) {
          to.searchParams.set('error', out.error.code);
          to.searchParams.set('error_description', out.error.message);
        }
        return reply.redirect(to.href, 303);
      }
      if (out.error) throw out.error;
      return { connection_id: out.connectionId, service: out.service, status: out.status };
    },
  );
}
