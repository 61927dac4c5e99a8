/**
 * Tables of the user-memory module: memories, session summaries and the embedding
 * space the stored vectors belong to.
 *
 * The `embedding` column of `memories` is NOT declared here: its type depends on the engine
 * (`vector(N)` + HNSW index where pgvector is installed, `real[]` where it is not — DESIGN.md §3),
 * so a custom migration creates it and the memory module reads/writes it with raw SQL.
 */
import { sql } from 'drizzle-orm';
import { customType, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, tz, updatedAt } from './columns.js';
import { userFk, users } from './identity.js';

/** PostgreSQL `tsvector` (full-text document). */
const tsvector = customType<{ data: string }>({
  dataType() {
    return 'tsvector';
  },
});

export const memories = pgTable(
  'memories',
  {
    id: text('id').primaryKey(),
    userId: userFk(),
    sessionId: text('session_id'),
    agentId: text('agent_id'),
    serviceId: text('service_id'),
    toolId: text('tool_id'),
    /** The execution this memory records (source `execution`); unique, so a replay writes nothing. */
    executionId: text('execution_id'),
    /** `explicit` | `execution` | `summary` */
    source: text('source').notNull(),
    /** `note` | `execution` | `summary` (migration 0041): what it is; search and list default to notes and summaries. */
    kind: text('kind').$type<'note' | 'execution' | 'summary'>().notNull().default('note'),
    content: text('content').notNull(),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    /** English full-text document of `content` (stemmed), maintained by PostgreSQL. */
    contentTsv: tsvector('content_tsv').notNull().generatedAlwaysAs(sql`to_tsvector('english'::regconfig, "content")`),
    createdAt: createdAt(),
    /** When what the memory records happened (`POST /memory` `occurred_at`, migration 0036); null = `createdAt`. */
    occurredAt: tz('occurred_at'),
  },
  (t) => [
    index('memories_user_idx').on(t.userId, t.id),
    index('memories_user_session_idx').on(t.userId, t.sessionId, t.id),
    index('memories_user_agent_idx').on(t.userId, t.agentId, t.id),
    index('memories_user_kind_idx').on(t.userId, t.kind, t.id),
    uniqueIndex('memories_execution_key').on(t.executionId),
    index('memories_tsv_idx').using('gin', t.contentTsv),
  ],
);

/**
 * Document frequencies of the full-text lexemes of each user's memories: in how many of the
 * user's memories each lexeme occurs. Maintained by statement-level triggers on `memories`
 * (migration 0014; memory content is never updated in place), read by search to weight rare query
 * terms above common ones (BM25's IDF).
 */
export const memoryTerms = pgTable(
  'memory_terms',
  {
    userId: userFk(),
    lexeme: text('lexeme').notNull(),
    df: integer('df').notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.lexeme] })],
);

/** Number of memories per user (the N of IDF), maintained with {@link memoryTerms}. */
export const memoryDocCounts = pgTable('memory_doc_counts', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  n: integer('n').notNull(),
});

/** The current summary of a session (one per session; rebuilt by `POST /memory/sessions/:id/summarize`). */
export const sessionSummaries = pgTable(
  'session_summaries',
  {
    /** `sum_…`; a new id on every rebuild (the timeline orders events by id). */
    id: text('id').primaryKey(),
    userId: userFk(),
    sessionId: text('session_id').notNull(),
    agentId: text('agent_id'),
    summary: text('summary').notNull(),
    keyPoints: jsonb('key_points').$type<string[]>().notNull().default([]),
    toolsUsed: jsonb('tools_used')
      .$type<
        Array<{
          service_id: string;
          tool_id: string;
          tool_name: string;
          calls: number;
          succeeded: number;
          failed: number;
        }>
      >()
      .notNull()
      .default([]),
    executionCount: integer('execution_count').notNull(),
    startedAt: tz('started_at'),
    endedAt: tz('ended_at'),
    /** `extractive` or `llm`. */
    generator: text('generator').notNull(),
    /** Chat model name when `generator` is `llm`. */
    model: text('model'),
    /** The memory (source `summary`) that holds this summary's text. */
    memoryId: text('memory_id'),
    generatedAt: tz('generated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('session_summaries_session_key').on(t.sessionId),
    index('session_summaries_user_idx').on(t.userId, t.id),
  ],
);

/**
 * The embedding space stored vectors belong to (one row, `key = 'embedding'`). Start-up compares it
 * with the configured provider: a different model or dimension count with memories stored is an
 * error unless `MEMORY_REEMBED=on`.
 */
export const memorySettings = pgTable('memory_settings', {
  key: text('key').primaryKey(),
  provider: text('provider').notNull(),
  model: text('model').notNull(),
  dimensions: integer('dimensions').notNull(),
  updatedAt: updatedAt(),
});
