/** TypeBox schemas of the memory routes (spec group "Memory"). */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';
import { KIND_FILTER_PATTERN } from './kinds.js';

const Id = Type.String({ minLength: 1, maxLength: 100 });
const Metadata = Type.Record(Type.String(), Type.Unknown());
const Source = Type.Union([Type.Literal('explicit'), Type.Literal('execution'), Type.Literal('summary')]);
const Kind = Type.Union([Type.Literal('note'), Type.Literal('execution'), Type.Literal('summary')], {
  description:
    "what it is: `note` (the user's or agent's own), `execution` (written by each tool execution) or `summary`",
});

export const MemorySchema = Type.Object({
  id: Type.String(),
  content: Type.String(),
  source: Source,
  kind: Kind,
  session_id: Nullable(Type.String()),
  agent_id: Nullable(Type.String()),
  service_id: Nullable(Type.String()),
  tool_id: Nullable(Type.String()),
  execution_id: Nullable(Type.String()),
  metadata: Metadata,
  created_at: Timestamp,
  occurred_at: Type.String({
    format: 'date-time',
    description: 'when what it records happened (created_at unless given on POST /memory)',
  }),
});

export const AddMemoryBody = Type.Object(
  {
    content: Type.String({ minLength: 1, description: 'at most 16 KiB (UTF-8); more → 413' }),
    session_id: Type.Optional(Id),
    agent_id: Type.Optional(Id),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'any JSON object, at most 8 KiB' }),
    ),
    occurred_at: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 40,
        description:
          'RFC 3339 time of what the memory records (a conversation turn, an event); default: now. Search matches time expressions ("last May") against it',
      }),
    ),
    kind: Type.Optional(
      Type.Union([Type.Literal('note'), Type.Literal('summary')], {
        default: 'note',
        description: '`note` (default) or `summary`; `execution` memories are written by tool executions only',
      }),
    ),
  },
  { additionalProperties: false },
);

const Filters = {
  session_id: Type.Optional(Id),
  agent_id: Type.Optional(Id),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'created at or after' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'created at or before' })),
  kind: Type.Optional(
    Type.String({
      pattern: KIND_FILTER_PATTERN,
      maxLength: 40,
      description:
        'kinds to return, separated by commas (`note`, `execution`, `summary`), or `all`; default `note,summary` (executions only on request)',
    }),
  ),
};

export const ListMemoryQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  ...Filters,
});

export const PagedMemoryQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, default: 1 })),
  page_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  ...Filters,
});

export const MemoryPageSchema = Type.Object({
  data: Type.Array(MemorySchema),
  page: Type.Integer(),
  page_size: Type.Integer(),
  total: Type.Integer(),
  total_pages: Type.Integer(),
});

export const SearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: 2000, description: 'what to look for (free text)' }),
  threshold: Type.Optional(
    Type.Number({ minimum: 0, maximum: 1, default: 0, description: 'minimum cosine similarity of a hit' }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
  session_id: Type.Optional(Id),
  agent_id: Type.Optional(Id),
  mode: Type.Optional(
    Type.Union([Type.Literal('hybrid'), Type.Literal('vector'), Type.Literal('text')], {
      default: 'hybrid',
      description: 'retrieval arms: both fused (default), vector only, full text only',
    }),
  ),
  expand: Type.Optional(
    Type.Literal('neighbors', {
      description:
        "`neighbors`: each hit also carries the memories just before and after it in its session (the conversation's context)",
    }),
  ),
  kind: Filters.kind,
});

export const SearchHitSchema = Type.Intersect([
  MemorySchema,
  Type.Object({
    score: Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        'relevance, 0..1 (higher is better; the order of the results): text match, similarity, time and neighbouring memories',
    }),
    similarity: Type.Number({
      minimum: 0,
      maximum: 1,
      description: 'cosine similarity of its embedding to the query, 0..1',
    }),
    vector_rank: Nullable(Type.Integer()),
    text_rank: Nullable(Type.Integer()),
    neighbors: Type.Optional(
      Type.Object(
        { previous: Nullable(MemorySchema), next: Nullable(MemorySchema) },
        {
          description:
            'with `expand=neighbors`: the memories before and after this one in its session, among those the search could return (null: none, or no session)',
        },
      ),
    ),
  }),
]);

export const SearchResultSchema = Type.Object({
  data: Type.Array(SearchHitSchema),
  query: Type.String(),
  mode: Type.String(),
  threshold: Type.Number(),
  filtered_count: Type.Integer({ description: 'candidates dropped because their similarity was below threshold' }),
  vector_index: Type.Union([Type.Literal('hnsw'), Type.Literal('exact')]),
});

export const StatsQuery = Type.Object({ agent_id: Type.Optional(Id) });

export const StatsSchema = Type.Object({
  total_memories: Type.Integer(),
  by_source: Type.Object({ explicit: Type.Integer(), execution: Type.Integer(), summary: Type.Integer() }),
  sessions_with_memories: Type.Integer(),
  summaries: Type.Integer(),
  oldest_at: Nullable(Timestamp),
  newest_at: Nullable(Timestamp),
  storage_bytes: Type.Integer(),
  embedding: Type.Object({ provider: Type.String(), model: Type.String(), dimensions: Type.Integer() }),
  vector_search: Type.Union([Type.Literal('pgvector_hnsw'), Type.Literal('exact_real_array')]),
});

const ToolUsed = Type.Object({
  service_id: Type.String(),
  tool_id: Type.String(),
  tool_name: Type.String(),
  calls: Type.Integer(),
  succeeded: Type.Integer(),
  failed: Type.Integer(),
});

export const SummarySchema = Type.Object({
  id: Type.String(),
  session_id: Type.String(),
  agent_id: Nullable(Type.String()),
  summary: Type.String(),
  key_points: Type.Array(Type.String()),
  tools_used: Type.Array(ToolUsed),
  execution_count: Type.Integer(),
  started_at: Nullable(Timestamp),
  ended_at: Nullable(Timestamp),
  generated_at: Timestamp,
  generator: Type.Union([Type.Literal('extractive'), Type.Literal('llm')]),
  model: Nullable(Type.String()),
  memory_id: Nullable(Type.String()),
});

export const TimelineQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

export const TimelineEventSchema = Type.Object({
  type: Type.Union([Type.Literal('execution'), Type.Literal('memory'), Type.Literal('summary')]),
  id: Type.String(),
  at: Timestamp,
  execution: Type.Optional(
    Type.Object({
      service_id: Type.String(),
      tool_id: Type.String(),
      tool_name: Type.String(),
      status: Type.String(),
      http_status: Nullable(Type.Integer()),
      duration_ms: Type.Integer(),
      error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
      memory: Nullable(Type.String()),
    }),
  ),
  memory: Type.Optional(Type.Object({ source: Type.String(), content: Type.String(), metadata: Metadata })),
  summary: Type.Optional(
    Type.Object({ summary: Type.String(), key_points: Type.Array(Type.String()), generator: Type.String() }),
  ),
});

export const ContextQuery = Type.Object({
  q: Type.Optional(
    Type.String({ maxLength: 2000, description: 'what the agent is about to do; omitted → the newest memories' }),
  ),
  agent_id: Type.Optional(Id),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
});

const SessionWithSummary = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  agent_id: Nullable(Type.String()),
  status: Type.String(),
  metadata: Metadata,
  execution_count: Type.Integer(),
  last_activity_at: Nullable(Timestamp),
  closed_at: Nullable(Timestamp),
  created_at: Timestamp,
  summary: Nullable(SummarySchema),
});

export const ContextSchema = Type.Object({
  agent_id: Nullable(Type.String()),
  query: Nullable(Type.String()),
  relevant_memories: Type.Array(
    Type.Intersect([
      MemorySchema,
      Type.Object({ score: Type.Optional(Type.Number()), similarity: Type.Optional(Type.Number()) }),
    ]),
  ),
  recent_sessions: Type.Array(SessionWithSummary),
  frequent_tools: Type.Array(
    Type.Object({
      service_id: Type.String(),
      tool_id: Type.String(),
      tool_name: Type.String(),
      calls: Type.Integer(),
      successes: Type.Integer(),
      failures: Type.Integer(),
      success_rate: Type.Number({ description: 'successes / calls, 0..1' }),
      avg_duration_ms: Type.Integer(),
    }),
  ),
  stats: StatsSchema,
});

export const DeleteQuery = Type.Object({ session_id: Type.Optional(Id) });

export const DeletedSchema = Type.Object({
  deleted: Type.Integer({ description: 'memories deleted' }),
  deleted_summaries: Type.Integer({ description: 'session summaries deleted' }),
});
