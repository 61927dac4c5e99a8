/**
 * HTTP routes of the sessions module (spec group "Executor (sessions)"): `/v1/agents` is the
 * spec's path for sessions; `/v1/sessions` serves the same records. Users and agents (for their
 * owner's account) may call them.
 */
import type { FastifyInstance } from 'fastify';
import type { TSchema } from 'typebox';
import type { AppContext } from '../../context.js';
import { actorOf, principalOf } from '../../http/auth.js';
import { authScope, created } from '../../http/operations.js';
import { IdParams, ListOf, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { executeTool } from './execute.js';
import {
  CreateSessionBody,
  ExecuteBody,
  ExecuteResultSchema,
  SessionDetailsSchema,
  SessionListQuery,
  SessionSchema,
} from './schemas.js';
import { closeSession, createSession, getSessionDetails, listSessions } from './service.js';

export async function sessionRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const { r, op } = authScope(app, ctx.auth, { tags: ['sessions'], security: USER_SECURITY });
  /** Schemas of a route on one session (`:id`): `result` (200) or a problem (400/401/403/404/429) out. */
  const byId = <R extends TSchema>(result: R) => ({
    params: IdParams,
    response: { 200: result, ...errorResponses(403, 404) },
  });

  r.post(
    '/v1/agents',
    op('sessions.create', 'Create a session', {
      body: CreateSessionBody,
      response: { 201: SessionSchema, ...errorResponses(403, 404) },
    }),
    async (req, reply) => created(reply, createSession(ctx, actorOf(principalOf(req)), req.body)),
  );

  for (const [url, operationId] of [
    ['/v1/agents', 'sessions.list'],
    ['/v1/sessions', 'sessions.listAll'],
  ] as const) {
    r.get(
      url,
      op(operationId, "List the caller's sessions, newest first", {
        querystring: SessionListQuery,
        response: { 200: ListOf(SessionSchema), ...errorResponses(403) },
      }),
      async (req) => listSessions(ctx, actorOf(principalOf(req)), req.query),
    );
  }

  for (const [url, operationId] of [
    ['/v1/agents/:id', 'sessions.get'],
    ['/v1/sessions/:id', 'sessions.getById'],
  ] as const) {
    r.get(url, op(operationId, 'Session details with its latest executions', byId(SessionDetailsSchema)), async (req) =>
      getSessionDetails(ctx, actorOf(principalOf(req)), req.params.id),
    );
  }

  r.post(
    '/v1/sessions/:id/close',
    op('sessions.close', 'Close a session (it then refuses new executions)', byId(SessionSchema)),
    async (req) => closeSession(ctx, actorOf(principalOf(req)), req.params.id),
  );

  r.post(
    '/v1/agents/:id/execute',
    op('sessions.execute', 'Execute a tool of a service in the session', {
      description:
        '200 when the platform did its job, even if the upstream answered 4xx/5xx (`status` "failed", the upstream status in `http_status`). ' +
        'Quota state in `X-Quota-Limit`, `X-Quota-Remaining`, `X-Quota-Reset` (Unix seconds) for the tightest window. ' +
        '202 `approval_required` (problem+json with `approval_id`, `approval_url`, `expires_at`) when a policy holds the call for a person’s approval: ' +
        'nothing ran; re-submit the same call with `approval_id` once it is approved (docs/governance.md).',
      params: IdParams,
      body: ExecuteBody,
      response: { 200: ExecuteResultSchema, ...errorResponses(202, 403, 404, 409, 502, 504) },
    }),
    async (req, reply) => {
      const { result, headers } = await executeTool(ctx, principalOf(req), req.params.id, req.body);
      reply.headers(headers);
      return result;
    },
  );
}
