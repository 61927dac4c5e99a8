/**
 * HTTP routes of the agent-memory module: an agent's own key/value memory under `/v2/memory`
 * (agent tokens only; user tokens get 403 `agent_token_required`) and another agent's memory
 * under `/v2/agents/:id/memory…` (grant-checked and audited). Also starts the periodic purge of
 * expired entries.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from 'typebox';
import type { AppContext } from '../../context.js';
import { agentOf, principalOf, requireAuth } from '../../http/auth.js';
import { authScope, noContent, operations } from '../../http/operations.js';
import { BEARER_SECURITY, IdParams, ListOf, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import {
  AgentKeyParams,
  AuditQuery,
  AuditSchema,
  ConditionalHeaders,
  EntrySchema,
  KeyParams,
  ListEntriesQuery,
  PutEntryBody,
} from './schemas.js';
import { deleteAgentMemory, getAgentMemory, listAgentMemory, listAudit, putAgentMemory } from './access.js';
import { etagOf, parseTagCondition, purgeExpiredEntries, type EntryView, type Preconditions } from './service.js';

function preconditions(headers: { 'if-match'?: string; 'if-none-match'?: string }): Preconditions {
  return {
    ifMatch: parseTagCondition(headers['if-match'], 'If-Match'),
    ifNoneMatch: parseTagCondition(headers['if-none-match'], 'If-None-Match'),
  };
}

function sendWritten(
  reply: FastifyReply,
  location: string,
  { entry, created }: { entry: EntryView; created: boolean },
): FastifyReply {
  reply.header('etag', etagOf(entry.version));
  if (created) reply.header('location', location);
  return reply.code(created ? 201 : 200).send(entry);
}

/** Schemas of a write of one entry: `params` and the conditional headers in; the entry (200 replaced, 201 created) or a problem out. */
function putSchemas<P extends TSchema>(params: P, ...codes: number[]) {
  return {
    params,
    headers: ConditionalHeaders,
    body: PutEntryBody,
    response: { 200: EntrySchema, 201: EntrySchema, ...errorResponses(403, ...codes, 409, 412, 413) },
  };
}

/** Schemas of a list about one agent (`:id`): `query` in, a page of `item` or a problem (…/403/404) out. */
function agentListSchemas<Q extends TSchema, I extends TSchema>(query: Q, item: I) {
  return { params: IdParams, querystring: query, response: { 200: ListOf(item), ...errorResponses(403, 404) } };
}

export async function agentMemoryRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const every = ctx.config.agents.memoryPurgeIntervalMs;
  if (every > 0) {
    const timer = setInterval(() => {
      purgeExpiredEntries(ctx).catch((err: Error) => ctx.log.warn({ err: err.message }, 'agent memory purge failed'));
    }, every);
    timer.unref();
    ctx.onClose.push(() => clearInterval(timer));
  }
  const bodyLimit = Math.max(ctx.config.bodyLimitBytes, ctx.config.agents.memoryMaxValueBytes + 64 * 1024);
  const tags = ['agent-memory'];

  // Own memory: agent tokens only.
  await app.register(async (scope) => {
    const { r, op } = authScope(scope, ctx.auth, { principals: ['agent'], tags: tags, security: BEARER_SECURITY });
    r.get(
      '/v2/memory',
      op('agentMemory.list', 'List own memory entries in key order (optionally under a prefix)', {
        querystring: ListEntriesQuery,
        response: { 200: ListOf(EntrySchema), ...errorResponses(403) },
      }),
      async (req) => {
        const agent = agentOf(req);
        return listAgentMemory(ctx, agent, agent.agentId, req.query);
      },
    );
    r.get(
      '/v2/memory/:key',
      op('agentMemory.get', 'Get an entry (ETag = version; If-None-Match → 304)', {
        params: KeyParams,
        headers: ConditionalHeaders,
        response: { 200: EntrySchema, 304: Type.Null(), ...errorResponses(403, 404) },
      }),
      async (req, reply) => {
        const agent = agentOf(req);
        const entry = await getAgentMemory(ctx, agent, agent.agentId, req.params.key);
        reply.header('etag', etagOf(entry.version));
        const inm = parseTagCondition(req.headers['if-none-match'], 'If-None-Match');
        if (inm === '*' || inm?.includes(entry.version)) return reply.code(304).send(null);
        return entry;
      },
    );
    r.put(
      '/v2/memory/:key',
      {
        bodyLimit,
        ...op(
          'agentMemory.put',
          'Create (201) or replace (200) an entry; If-Match / If-None-Match: * for optimistic concurrency',
          putSchemas(KeyParams),
        ),
      },
      async (req, reply) => {
        const agent = agentOf(req);
        const res = await putAgentMemory(
          ctx,
          agent,
          agent.agentId,
          req.params.key,
          req.body,
          preconditions(req.headers),
        );
        return sendWritten(reply, `/v2/memory/${encodeURIComponent(req.params.key)}`, res);
      },
    );
    r.delete(
      '/v2/memory/:key',
      op('agentMemory.delete', 'Delete an entry (If-Match honoured)', {
        params: KeyParams,
        headers: ConditionalHeaders,
        response: { 204: Type.Null(), ...errorResponses(403, 404, 412) },
      }),
      async (req, reply) => {
        const agent = agentOf(req);
        return noContent(
          reply,
          deleteAgentMemory(ctx, agent, agent.agentId, req.params.key, preconditions(req.headers)),
        );
      },
    );
  });

  // Another agent's memory: owner user, the agent itself, or a grantee agent.
  await app.register(async (scope) => {
    requireAuth(scope, ctx.auth);
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();
    // Users (token or API key) and agents are admitted here.
    const op = operations(tags, USER_SECURITY);
    r.get(
      '/v2/agents/:id/memory',
      op(
        'agentMemory.listOf',
        "Read an agent's memory (other agents need a live grant; audited)",
        agentListSchemas(ListEntriesQuery, EntrySchema),
      ),
      async (req) => listAgentMemory(ctx, principalOf(req), req.params.id, req.query),
    );
    r.put(
      '/v2/agents/:id/memory/:key',
      {
        bodyLimit,
        ...op(
          'agentMemory.putOf',
          "Write one key of an agent's memory (other agents need a live write grant; audited)",
          putSchemas(AgentKeyParams, 404),
        ),
      },
      async (req, reply) => {
        const res = await putAgentMemory(
          ctx,
          principalOf(req),
          req.params.id,
          req.params.key,
          req.body,
          preconditions(req.headers),
        );
        return sendWritten(reply, `/v2/agents/${req.params.id}/memory/${encodeURIComponent(req.params.key)}`, res);
      },
    );
    r.get(
      '/v2/agents/:id/memory/audit',
      op(
        'agentMemory.audit',
        "Cross-agent reads and writes of this agent's memory, newest first (owner user or the agent itself)",
        agentListSchemas(AuditQuery, AuditSchema),
      ),
      async (req) => listAudit(ctx, principalOf(req), req.params.id, req.query),
    );
  });
}
