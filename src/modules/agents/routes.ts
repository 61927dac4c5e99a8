/**
 * HTTP routes of the agents module: `/v2/agents…` management (signed-in users; another account's
 * agent is 404 on every route), reads an agent may also make about itself (`GET
 * /v2/agents/:id/tools/changes`) and the token endpoint `POST /auth/agent/token` (RFC 6749 §4.4).
 *
 * The plugin also installs agent-token verification on `ctx.auth` (see `tokens.ts`).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import formbody from '@fastify/formbody';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { AcceptChangesBody, AcceptChangesResult } from '../subscriptions/schemas.js';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { principalOf, userOf } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { authScope, created, noContent } from '../../http/operations.js';
import { BEARER_SECURITY, IdParams, ListOf, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import {
  AgentSchema,
  AgentToolChangesSchema,
  AgentToolSchema,
  AgentWithSecretSchema,
  CreateAgentBody,
  ListAgentsQuery,
  OAuthErrorSchema,
  RotateSecretBody,
  SubscribeToolBody,
  ToolChangesQuery,
  TokenRequestBody,
  TokenResponseSchema,
  ToolsQuery,
  UnsubscribeToolBody,
  UnsubscribeToolQuery,
  UpdateAgentBody,
} from './schemas.js';
import { createAgent, deleteAgent, getAgent, listAgents, rotateSecret, updateAgent } from './service.js';
import { claimedClientId, readTokenRequest } from './token-request.js';
import { OAuthError, installAgentAuth, issueAgentToken, type PlatformSigner } from './tokens.js';
import {
  acceptAgentToolChanges,
  listAgentToolChanges,
  listAgentTools,
  subscribeAgentTool,
  unsubscribeAgentTool,
} from './tools.js';

export interface AgentRouteDeps {
  ctx: AppContext;
  /** The identity service (platform signing keys, token verifier, owner roles). */
  identity: PlatformSigner;
}

export async function agentRoutes(app: FastifyInstance, { ctx, identity }: AgentRouteDeps): Promise<void> {
  await installAgentAuth(ctx, identity);
  await app.register(tokenEndpoint, { ctx });
  await app.register(async (scope) => managementRoutes(scope, ctx));
  await app.register(async (scope) => selfReadRoutes(scope, ctx));
}

// ------------------------------------------------------------------------- reads by the owner or the agent itself

/** Routes the owner and the agent `:id` itself may call (ADR 0972); the service functions check which. */
async function selfReadRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const { r, op } = authScope(app, ctx.auth, {
    principals: ['user', 'agent'],
    tags: ['agents'],
    security: [...USER_SECURITY, ...BEARER_SECURITY],
  });
  r.get(
    '/v2/agents/:id/tools/changes',
    op(
      'agents.tools.changes',
      "Pending tool-definition changes of the agent's services (owner with agents:manage, or the agent itself)",
      {
        params: IdParams,
        querystring: ToolChangesQuery,
        response: { 200: ListOf(AgentToolChangesSchema), ...errorResponses(403, 404) },
      },
    ),
    async (req) => listAgentToolChanges(ctx, principalOf(req), req.params.id, req.query),
  );
}

// ------------------------------------------------------------------------- management

async function managementRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const { r, op } = authScope(app, ctx.auth, { principals: ['user'], tags: ['agents'], security: USER_SECURITY });

  r.post(
    '/v2/agents',
    op('agents.create', 'Create an agent; the answer carries client_secret once', {
      body: CreateAgentBody,
      response: { 201: AgentWithSecretSchema, ...errorResponses(403) },
    }),
    async (req, reply) => created(reply, createAgent(ctx, userOf(req), req.body), { noStore: true }),
  );
  r.get(
    '/v2/agents',
    op('agents.list', "List the account's agents", {
      querystring: ListAgentsQuery,
      response: { 200: ListOf(AgentSchema), ...errorResponses(403) },
    }),
    async (req) => listAgents(ctx, userOf(req), req.query),
  );
  r.get(
    '/v2/agents/:id',
    op('agents.get', 'Agent details (live secrets listed without the secret)', {
      params: IdParams,
      response: { 200: AgentSchema, ...errorResponses(403, 404) },
    }),
    async (req) => getAgent(ctx, userOf(req), req.params.id),
  );
  r.patch(
    '/v2/agents/:id',
    op('agents.update', 'Update name, description, metadata or status (active | disabled)', {
      params: IdParams,
      body: UpdateAgentBody,
      response: { 200: AgentSchema, ...errorResponses(403, 404) },
    }),
    async (req) => updateAgent(ctx, userOf(req), req.params.id, req.body),
  );
  r.delete(
    '/v2/agents/:id',
    op('agents.delete', 'Soft delete an agent (its tokens stop working; memory is kept)', {
      params: IdParams,
      response: { 204: Type.Null(), ...errorResponses(403, 404) },
    }),
    async (req, reply) => noContent(reply, deleteAgent(ctx, userOf(req), req.params.id)),
  );
  r.post(
    '/v2/agents/:id/rotate-secret',
    op('agents.rotateSecret', 'Issue a new client secret; older secrets end now or after grace_period_seconds', {
      params: IdParams,
      body: Type.Union([Type.Null(), RotateSecretBody]), // no body = no grace period
      response: { 200: AgentWithSecretSchema, ...errorResponses(403, 404) },
    }),
    async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return rotateSecret(ctx, userOf(req), req.params.id, req.body?.grace_period_seconds ?? 0);
    },
  );

  r.post(
    '/v2/agents/:id/tools/subscribe',
    op(
      'agents.tools.subscribe',
      'Subscribe the agent to a service by name (the owner must be subscribed to it or own it)',
      {
        params: IdParams,
        body: SubscribeToolBody,
        response: { 200: AgentToolSchema, 201: AgentToolSchema, ...errorResponses(403, 404) },
      },
    ),
    async (req, reply) => {
      const { created: isNew, subscription } = await subscribeAgentTool(
        ctx,
        userOf(req),
        req.params.id,
        req.body.service,
      );
      return reply.code(isNew ? 201 : 200).send(subscription);
    },
  );
  r.post(
    '/v2/agents/:id/tools/accept-changes',
    op('agents.tools.acceptChanges', "Accept changed tool definitions of one of the agent's services (re-pin)", {
      params: IdParams,
      body: Type.Object({ service: Type.String({ minLength: 1, maxLength: 200 }), ...AcceptChangesBody.properties }),
      response: { 200: AcceptChangesResult, ...errorResponses(403, 404) },
    }),
    async (req) => acceptAgentToolChanges(ctx, userOf(req), req.params.id, req.body.service, req.body.tools),
  );
  r.delete(
    '/v2/agents/:id/tools/unsubscribe',
    op('agents.tools.unsubscribe', 'Unsubscribe the agent from a service (`service` in the body or the query)', {
      params: IdParams,
      querystring: UnsubscribeToolQuery,
      body: Type.Union([Type.Null(), UnsubscribeToolBody]),
      response: { 204: Type.Null(), ...errorResponses(403, 404) },
    }),
    async (req, reply) =>
      noContent(reply, unsubscribeAgentTool(ctx, userOf(req), req.params.id, req.body?.service ?? req.query.service)),
  );
  r.get(
    '/v2/agents/:id/tools',
    op('agents.tools.list', "List the agent's tool subscriptions", {
      params: IdParams,
      querystring: ToolsQuery,
      response: { 200: ListOf(AgentToolSchema), ...errorResponses(403, 404) },
    }),
    async (req) => listAgentTools(ctx, userOf(req), req.params.id, req.query),
  );
}

// ------------------------------------------------------------------------- token endpoint

const BASIC_REALM = 'Basic realm="agent-platform", charset="UTF-8"';

function sendOAuthError(reply: FastifyReply, err: OAuthError, headers?: Record<string, string>): FastifyReply {
  reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
  if (headers) reply.headers(headers);
  if (err.error === 'invalid_client') reply.header('www-authenticate', BASIC_REALM);
  return reply.code(err.status).send({ error: err.error, error_description: err.message });
}

/** `POST /auth/agent/token` in its own scope: form parser, per-client limiter and RFC 6749 §5.2 errors. */
async function tokenEndpoint(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  await app.register(formbody);
  const { tokenRateLimit, tokenRateWindowMs } = ctx.config.agents;
  const perClient = app.createRateLimit({
    max: tokenRateLimit,
    timeWindow: tokenRateWindowMs,
    keyGenerator: (req) => {
      const id = claimedClientId(req.body, req.headers.authorization);
      return id ? `agent-token:cid:${id}` : `agent-token:ip:${req.ip}`;
    },
  });

  app.setErrorHandler((err: Error & { validation?: unknown; code?: string; statusCode?: number }, req, reply) => {
    if (err instanceof OAuthError) return sendOAuthError(reply, err);
    if (err instanceof AppError && err.code === 'rate_limited')
      return sendOAuthError(reply, new OAuthError('rate_limited', err.message), err.headers);
    // Client errors of any layer (schema validation, content-type parsing, the edge's unstorable-input check) are RFC 6749 §5.2 invalid_request.
    const clientError =
      err instanceof AppError ? err.status < 500 : err.statusCode !== undefined && err.statusCode < 500;
    if (err.validation || (err.code?.startsWith('FST_ERR_CTP_') ?? false) || clientError) {
      return sendOAuthError(reply, new OAuthError('invalid_request', `Malformed token request: ${err.message}`));
    }
    req.log.error({ err }, 'token endpoint failure');
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    return reply.code(500).send({
      error: 'server_error',
      error_description: 'An unexpected error occurred; the request id identifies it in our logs',
    });
  });

  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post(
    '/auth/agent/token',
    {
      schema: {
        tags: ['auth'],
        operationId: 'agents.token',
        summary: 'Get an agent access token (OAuth 2.0 client credentials grant, RFC 6749 §4.4)',
        description:
          'Form-urlencoded or JSON. Client authentication by HTTP Basic (client_secret_basic) or client_id + client_secret in the body (client_secret_post), never both. Errors use the RFC 6749 §5.2 body.',
        security: [],
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: Type.Union([Type.Null(), TokenRequestBody]),
        response: {
          200: TokenResponseSchema,
          400: OAuthErrorSchema,
          401: OAuthErrorSchema,
          429: OAuthErrorSchema,
          500: OAuthErrorSchema,
        },
      },
      preHandler: async (req, reply) => {
        const res = await perClient(req);
        if (res.isAllowed) return;
        reply
          .header('ratelimit-limit', res.max)
          .header('ratelimit-remaining', res.remaining)
          .header('ratelimit-reset', res.ttlInSeconds);
        if (res.isExceeded) {
          throw new AppError(
            'rate_limited',
            `Too many token requests for this client; retry in ${res.ttlInSeconds} s`,
            { headers: { 'retry-after': String(res.ttlInSeconds) } },
          );
        }
      },
    },
    async (req, reply) => {
      const input = readTokenRequest(req.body, req.headers.authorization);
      const token = await issueAgentToken(ctx, input);
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      return token;
    },
  );
}
