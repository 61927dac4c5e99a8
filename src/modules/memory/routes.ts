/** HTTP routes of the user-memory module (spec group "Memory"). Users and agents may call them; each calls access.ts, which checks the `memory:read` / `memory:write` scope. */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from 'typebox';
import type { AppContext } from '../../context.js';
import { principalOf, requireAuth } from '../../http/auth.js';
import { IdParams, ListOf, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import {
  AddMemoryBody,
  ContextQuery,
  ContextSchema,
  DeleteQuery,
  DeletedSchema,
  ListMemoryQuery,
  MemoryPageSchema,
  MemorySchema,
  PagedMemoryQuery,
  SearchQuery,
  SearchResultSchema,
  StatsQuery,
  StatsSchema,
  SummarySchema,
  TimelineEventSchema,
  TimelineQuery,
} from './schemas.js';
import {
  addMemoryAs,
  agentContextAs,
  deleteMemoriesAs,
  getSessionSummaryAs,
  listMemoriesAs,
  listMemoriesPagedAs,
  memoryStatsAs,
  searchMemoriesAs,
  sessionTimelineAs,
  summarizeSessionAs,
} from './access.js';
import { initMemory } from './runtime.js';

export async function memoryRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  await initMemory(ctx);
  requireAuth(app, ctx.auth);
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['memory'];
  const security = USER_SECURITY;
  /** Route options of a GET with only a query: `querystring` in, `result` (200) or a problem (400/401/403/429 and `errors`) out. */
  const queryRoute = <Q extends TSchema, R extends TSchema>(
    operationId: string,
    summary: string,
    querystring: Q,
    result: R,
    ...errors: number[]
  ) => ({
    schema: {
      tags,
      security,
      operationId,
      summary,
      querystring,
      response: { 200: result, ...errorResponses(403, ...errors) },
    },
  });

  r.post(
    '/memory',
    {
      schema: {
        tags,
        security,
        operationId: 'memory.create',
        summary: 'Store a memory (embedded for search)',
        body: AddMemoryBody,
        response: { 201: MemorySchema, ...errorResponses(403, 404, 413, 502, 504) },
      },
    },
    async (req, reply) => reply.code(201).send(await addMemoryAs(ctx, principalOf(req), req.body)),
  );
  r.get(
    '/memory',
    queryRoute('memory.list', "List the caller's memories, newest first", ListMemoryQuery, ListOf(MemorySchema)),
    async (req) => listMemoriesAs(ctx, principalOf(req), req.query),
  );
  r.get(
    '/memory/paginated',
    queryRoute('memory.listPaginated', 'Memories by page, with a total', PagedMemoryQuery, MemoryPageSchema),
    async (req) => listMemoriesPagedAs(ctx, principalOf(req), req.query),
  );
  r.get(
    '/memory/search',
    queryRoute(
      'memory.search',
      'Hybrid search (vector + full text, fused) with a similarity threshold',
      SearchQuery,
      SearchResultSchema,
      502,
      504,
    ),
    async (req) => searchMemoriesAs(ctx, principalOf(req), req.query),
  );
  r.get(
    '/memory/context/agent',
    queryRoute(
      'memory.agentContext',
      'What an agent should know before acting: relevant memories, recent sessions, frequent tools, stats',
      ContextQuery,
      ContextSchema,
      502,
      504,
    ),
    async (req) => agentContextAs(ctx, principalOf(req), req.query),
  );
  r.get(
    '/memory/sessions/:id',
    {
      schema: {
        tags,
        security,
        operationId: 'memory.sessionSummary',
        summary: "A session's summary",
        params: IdParams,
        response: { 200: SummarySchema, ...errorResponses(403, 404) },
      },
    },
    async (req) => getSessionSummaryAs(ctx, principalOf(req), req.params.id),
  );
  r.get(
    '/memory/sessions/:id/timeline',
    {
      schema: {
        tags,
        security,
        operationId: 'memory.sessionTimeline',
        summary: 'Every event of a session in order (executions, memories, summary)',
        params: IdParams,
        querystring: TimelineQuery,
        response: { 200: ListOf(TimelineEventSchema), ...errorResponses(403, 404) },
      },
    },
    async (req) => sessionTimelineAs(ctx, principalOf(req), req.params.id, req.query),
  );
  r.post(
    '/memory/sessions/:id/summarize',
    {
      schema: {
        tags,
        security,
        operationId: 'memory.summarizeSession',
        summary: 'Build (or rebuild) the summary of a session; it is stored as a memory too',
        params: IdParams,
        response: { 200: SummarySchema, ...errorResponses(403, 404, 502, 504) },
      },
    },
    async (req) => summarizeSessionAs(ctx, principalOf(req), req.params.id),
  );
  r.get('/memory/stats', queryRoute('memory.stats', 'Memory statistics', StatsQuery, StatsSchema), async (req) =>
    memoryStatsAs(ctx, principalOf(req), req.query),
  );
  r.delete(
    '/memory',
    {
      schema: {
        tags,
        security,
        operationId: 'memory.deleteAll',
        summary: "Delete the caller's memories and summaries (optionally one session's)",
        querystring: DeleteQuery,
        response: { 200: DeletedSchema, ...errorResponses(403, 404) },
      },
    },
    async (req) => deleteMemoriesAs(ctx, principalOf(req), req.query),
  );
}
