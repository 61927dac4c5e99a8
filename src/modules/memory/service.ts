/**
 * User memory (spec group "Memory"; mem0/Zep-style): explicit and automatic memories with
 * embeddings, hybrid search (vector cosine + PostgreSQL full text, fused by reciprocal rank), session
 * summaries and timelines, agent context and statistics.
 *
 * Scoping: every function takes a {@link SessionActor} — the account (`accountOf(principal)`) and,
 * for an agent principal, the agent. Users see all memories of their account; an agent sees only
 * the memories that carry its own `agent_id` (docs/adr/0097-memory-agents-agent-principals-act-for-their.md), exactly as the sessions module
 * shows an agent only its own sessions. Another account's session is "not found".
 */
import { and, count, desc, eq, lt, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { memories, sessionSummaries } from '../../db/schema/index.js';
import { AppError } from '../../http/errors.js';
import { iso } from '../../http/ids.js';
import { decodeCursor, toPage, type Page } from '../../http/pagination.js';
import { getAgentForAccount } from '../agents/service.js';
import type { SessionActor } from '../../http/auth.js';
import { getSessionFor } from '../sessions/service.js';
import {
  fusedCandidates,
  insertMemoryRows,
  noteRow,
  withSearchSettings,
  type CandidateRow,
  type SearchMode,
} from './store.js';

import { embedQuery, embeddingProviderOf, flushMemoryWrites } from './runtime.js';
import { pageOf, searchInProcess, type SearchArms } from './search-in-process.js';
import type { Span } from '@opentelemetry/api';
import { searchAttributes } from './search-span.js';
import { PLATFORM } from '../../telemetry/names.js';
import { tracingOn, withSpan } from '../../telemetry/trace.js';
import { rowFacts } from './turn-facts.js';
import { embeddingText, previousNoteOf, sessionNeighbours } from './turns.js';
import { rankCandidates } from './ranking.js';
import { kindMask, selectedKinds } from './kinds.js';
import {
  filtered,
  filteredSql,
  MEMORY_COLUMNS,
  memoryView,
  scoped,
  type MemoryFilter,
  type MemoryView,
} from './views.js';

/** Input of `POST /memory`. */
export interface AddMemoryInput {
  content: string;
  session_id?: string;
  agent_id?: string;
  metadata?: Record<string, unknown>;
  /** RFC 3339 date-time with an offset: when what the memory records happened (default: now). */
  occurred_at?: string;
  /** `note` (default) or `summary`; `execution` is the tool-execution hook's own (kinds.ts). */
  kind?: 'note' | 'summary';
}

/** An RFC 3339 date-time (with its offset) as a Date. @throws AppError validation_failed otherwise */
function occurredAt(value: string | undefined): Date | null {
  if (value === undefined) return null;
  const d = new Date(value);
  if (
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(value) ||
    Number.isNaN(d.getTime())
  ) {
    throw new AppError('validation_failed', 'occurred_at must be an RFC 3339 date-time with an offset', {
      errors: [
        { in: 'body', pointer: '/occurred_at', message: 'not an RFC 3339 date-time (e.g. 2023-05-04T18:20:00Z)' },
      ],
    });
  }
  return d;
}

/** Largest serialised `metadata`, bytes. */
export const MAX_METADATA_BYTES = 8 * 1024;

/**
 * Store an explicit memory (embedded synchronously; a conversation turn — `metadata.speaker` — with
 * its speaker and the session's previous memory, see turns.ts). The memory inherits the session's agent when
 * `agent_id` is not given; an agent's memories always carry its own id.
 * @throws AppError payload_too_large (content > MEMORY_MAX_CONTENT_BYTES, metadata > 8 KiB),
 *   validation_failed (blank content; occurred_at not RFC 3339; agent_id differs from the session's agent), forbidden (an agent
 *   naming another agent), not_found (session or agent not the caller's), upstream_error (embedding)
 */
export async function addMemory(ctx: AppContext, actor: SessionActor, input: AddMemoryInput): Promise<MemoryView> {
  const max = ctx.config.memory.maxContentBytes;
  const bytes = Buffer.byteLength(input.content, 'utf8');
  if (bytes > max)
    throw new AppError('payload_too_large', `content is ${bytes} bytes; at most ${max} bytes (UTF-8) are accepted`);
  if (!input.content.trim())
    throw new AppError('validation_failed', 'content must not be blank', {
      errors: [{ in: 'body', pointer: '/content', message: 'must not be blank' }],
    });
  const metadata = input.metadata ?? {};
  const occurred = occurredAt(input.occurred_at);
  if (Buffer.byteLength(JSON.stringify(metadata), 'utf8') > MAX_METADATA_BYTES) {
    throw new AppError('payload_too_large', `metadata is larger than ${MAX_METADATA_BYTES} bytes of JSON`);
  }
  let agentId: string | null = actor.agentId;
  if (input.agent_id !== undefined) {
    if (actor.agentId && input.agent_id !== actor.agentId)
      throw new AppError('forbidden', 'An agent can only write memories under its own agent_id');
    if (!actor.agentId) agentId = (await getAgentForAccount(ctx, actor.accountId, input.agent_id)).id;
  }
  if (input.session_id !== undefined) {
    const s = await getSessionFor(ctx, actor, input.session_id);
    if (agentId === null) agentId = s.agentId;
    else if (s.agentId !== null && s.agentId !== agentId) {
      throw new AppError('validation_failed', "agent_id does not match the session's agent", {
        errors: [{ in: 'body', pointer: '/agent_id', message: "differs from the session's agent" }],
      });
    }
  }
  const kind = input.kind ?? 'note';
  const previous = kind === 'note' ? await previousNoteOf(ctx.db, actor.accountId, input.session_id ?? null) : null;
  const [vector] = await embeddingProviderOf(ctx).embed([embeddingText(input.content, metadata, previous)]);
  const row = noteRow(actor.accountId, input.content, {
    sessionId: input.session_id ?? null,
    agentId,
    kind,
    metadata,
    occurredAt: occurred,
  });
  const [ins] = await insertMemoryRows(ctx, ctx.db, [row], [vector]);
  return memoryView({ ...row, createdAt: new Date(ins.created_at) });
}

/**
 * Delete the caller's memories and session summaries (all, or one session's) and nobody else's.
 * Pending automatic memories of this instance are written first, so none reappears afterwards.
 * @throws AppError not_found when `session_id` is not a session of the caller
 */
export async function deleteMemories(
  ctx: AppContext,
  actor: SessionActor,
  q: { session_id?: string },
): Promise<{ deleted: number; deleted_summaries: number }> {
  if (q.session_id) await getSessionFor(ctx, actor, q.session_id);
  await flushMemoryWrites(ctx);
  const result = await ctx.db.transaction(async (tx) => {
    const gone = await tx
      .delete(memories)
      .where(and(scoped(actor), q.session_id ? eq(memories.sessionId, q.session_id) : undefined))
      .returning({ id: memories.id });
    const sums = await tx
      .delete(sessionSummaries)
      .where(
        and(
          eq(sessionSummaries.userId, actor.accountId),
          actor.agentId ? eq(sessionSummaries.agentId, actor.agentId) : undefined,
          q.session_id ? eq(sessionSummaries.sessionId, q.session_id) : undefined,
        ),
      )
      .returning({ id: sessionSummaries.id });
    return { deleted: gone.length, deleted_summaries: sums.length };
  });
  // After the commit: a search meanwhile saw the rows, as the database still did; one loading now is not kept.
  ctx.memory?.vectors?.forget(actor.accountId);
  ctx.memory?.text?.forget(actor.accountId);
  return result;
}

/** The caller's memories, newest first, keyset-paginated. */
export async function listMemories(
  ctx: AppContext,
  actor: SessionActor,
  q: MemoryFilter & { limit?: number; cursor?: string },
): Promise<Page<MemoryView>> {
  await flushMemoryWrites(ctx);
  const limit = q.limit ?? 20;
  const after = decodeCursor(q.cursor);
  const rows = await ctx.db
    .select(MEMORY_COLUMNS)
    .from(memories)
    .where(and(filtered(actor, q), after ? lt(memories.id, after) : undefined))
    .orderBy(desc(memories.id))
    .limit(limit + 1);
  return toPage(rows, limit, memoryView);
}

/** Offset pagination with a total (`GET /memory/paginated`). */
export interface MemoryPage {
  data: MemoryView[];
  page: number;
  page_size: number;
  total: number;
  total_pages: number;
}

/** The caller's memories, newest first, page `page` (1-based) of `page_size`. */
export async function listMemoriesPaged(
  ctx: AppContext,
  actor: SessionActor,
  q: MemoryFilter & { page?: number; page_size?: number },
): Promise<MemoryPage> {
  await flushMemoryWrites(ctx);
  const page = q.page ?? 1;
  const pageSize = q.page_size ?? 20;
  const where = filtered(actor, q);
  const [rows, [{ n }]] = await Promise.all([
    ctx.db
      .select(MEMORY_COLUMNS)
      .from(memories)
      .where(where)
      .orderBy(desc(memories.id))
      .limit(pageSize)
      .offset((page - 1) * pageSize),
    ctx.db.select({ n: count() }).from(memories).where(where),
  ]);
  const total = Number(n);
  return { data: rows.map(memoryView), page, page_size: pageSize, total, total_pages: Math.ceil(total / pageSize) };
}

/** Query of `GET /memory/search`. */
export interface SearchInput {
  q: string;
  threshold?: number;
  limit?: number;
  session_id?: string;
  agent_id?: string;
  mode?: SearchMode;
  /** `neighbors`: attach each hit's previous and next memory of its session. */
  expand?: 'neighbors';
  /** `all` or kinds separated by commas; absent → notes and summaries (kinds.ts). */
  kind?: string;
}

/** A search hit: the memory, its relevance and its cosine similarity. */
export interface SearchHit extends MemoryView {
  /** Relevance, 0..1 (higher is better; ranking.ts): text match, similarity, time and neighbours. */
  score: number;
  /** Cosine similarity of the memory to the query, clamped to 0..1 (0 for a memory without a vector). */
  similarity: number;
  /** Rank in the vector arm / the full-text arm (null: not among that arm's candidates). */
  vector_rank: number | null;
  text_rank: number | null;
  /** With `expand=neighbors`: the memories before and after it in its session. */
  neighbors?: { previous: MemoryView | null; next: MemoryView | null };
}

/** Answer of `GET /memory/search`. */
export interface SearchResult {
  data: SearchHit[];
  query: string;
  mode: SearchMode;
  threshold: number;
  /** Candidates dropped because their similarity was below `threshold`. */
  filtered_count: number;
  /** `hnsw` (pgvector) or `exact` (real[] path). */
  vector_index: 'hnsw' | 'exact';
}

/** Candidates per arm: enough for fusion to matter, bounded for latency. */
function poolSize(limit: number): number {
  return Math.min(200, Math.max(50, limit * 4));
}

/**
 * Hybrid search over the caller's memories (of the kinds asked; notes and summaries by default):
 * the nearest vectors (cosine) and the best full-text matches, ranked by ranking.ts (normalised text
 * score and similarity, time, neighbouring memories; `config.memory.fusion`); then candidates with
 * `similarity < threshold` are dropped (counted in `filtered_count`) and the best `limit` returned.
 * @throws AppError validation_failed (blank q), upstream_error (remote embedding provider)
 */
export async function searchMemories(ctx: AppContext, actor: SessionActor, input: SearchInput): Promise<SearchResult> {
  const q = input.q.trim();
  if (!q)
    throw new AppError('validation_failed', 'q must not be empty', {
      errors: [{ in: 'query', pointer: '/q', message: 'must not be empty' }],
    });
  if (!tracingOn()) return runSearch(ctx, actor, input, q, null);
  return withSpan('memory.search', { attributes: { [PLATFORM.accountId]: actor.accountId } }, (span) =>
    runSearch(ctx, actor, input, q, span ?? null),
  );
}

/**
 * {@link searchMemories} after its validation; with `span` (tracing on), what each arm found and how
 * long it and the query's embedding took are set on it ({@link searchAttributes}).
 */
async function runSearch(
  ctx: AppContext,
  actor: SessionActor,
  input: SearchInput,
  q: string,
  span: Span | null,
): Promise<SearchResult> {
  const started = span ? performance.now() : 0;
  const cached = span ? (ctx.memory?.queryVectors.has(q) ?? false) : false;
  const arms: SearchArms | undefined = span
    ? { textCandidates: null, textMs: null, vectorCandidates: null, vectorMs: null }
    : undefined;
  // the query's embedding (in the encoder's worker) overlaps the pending writes' flush and the full-text arm
  const pending = embedQuery(ctx, q);
  pending.catch(() => undefined); // awaited below; an early failure elsewhere must not leave it unhandled
  let embeddingMs: number | null = null;
  if (span)
    void pending.then(
      () => void (embeddingMs = performance.now() - started),
      () => undefined,
    );
  await flushMemoryWrites(ctx);
  const limit = input.limit ?? 10;
  const threshold = input.threshold ?? 0;
  const mode = input.mode ?? 'hybrid';
  const where = filteredSql(actor, input);
  const pool = poolSize(limit);
  // both arms in process where they can be (PGlite: text-index.ts, vector-cache.ts): scope and agent filter only
  const rt = ctx.memory;
  const agent = actor.agentId ?? input.agent_id ?? null;
  const scopeOnly = !input.session_id && !(actor.agentId && input.agent_id && input.agent_id !== actor.agentId);
  const kinds = kindMask(selectedKinds(input.kind));
  const local =
    rt?.text && rt.vectors && scopeOnly
      ? await searchInProcess(ctx, ctx.db, {
          userId: actor.accountId,
          agentId: agent,
          kinds,
          where,
          query: q,
          vector: pending,
          pool,
          mode,
          text: rt.text,
          vectors: rt.vectors,
          limit,
          threshold,
          arms,
        })
      : null;
  const vector = await pending;
  const { top, filteredCount } =
    local ??
    pageOf(
      await withSearchSettings(ctx, actor.accountId, async (tx) => {
        // the vector arm in process where it can be (vector-cache.ts)
        const cache = scopeOnly && mode !== 'text' ? rt?.vectors : null;
        const vectorHits = cache ? await cache.nearest(tx, actor.accountId, vector, pool, agent, kinds) : undefined;
        const fused = await fusedCandidates(ctx, tx, {
          userId: actor.accountId,
          where,
          query: q,
          vector,
          pool,
          mode,
          vectorHits,
        });
        if (arms) {
          arms.textCandidates = mode === 'vector' ? null : fused.filter((c) => c.text_rank !== null).length;
          arms.vectorCandidates = mode === 'text' ? null : fused.filter((c) => c.vector_rank !== null).length;
        }
        return rankCandidates(ctx, tx, actor.accountId, q, fused, { mode, where, facts: (c) => rowFacts(c.row) });
      }),
      threshold,
      limit,
    );
  const near =
    input.expand === 'neighbors'
      ? await sessionNeighbours(
          ctx.db,
          where,
          top.map((c) => c.id),
        )
      : null;
  const view = (r: CandidateRow['row'] | null) => (r ? memoryView(r) : null);
  if (span && arms)
    span.setAttributes(
      searchAttributes({
        mode,
        limit,
        path: local ? 'in_process' : 'sql',
        arms,
        cached,
        embeddingMs,
        hits: top.length,
      }),
    );
  return {
    data: top.map((c) => ({
      ...memoryView(c.row),
      score: Number(c.score.toFixed(6)),
      similarity: Number(c.similarity.toFixed(6)),
      vector_rank: c.vector_rank,
      text_rank: c.text_rank,
      ...(near ? { neighbors: { previous: view(near.get(c.id)!.previous), next: view(near.get(c.id)!.next) } } : {}),
    })),
    query: q,
    mode,
    threshold,
    filtered_count: filteredCount,
    vector_index: ctx.database.hasVector ? 'hnsw' : 'exact',
  };
}

/** Answer of `GET /memory/stats`. */
export interface MemoryStats {
  total_memories: number;
  by_source: { explicit: number; execution: number; summary: number };
  sessions_with_memories: number;
  summaries: number;
  oldest_at: string | null;
  newest_at: string | null;
  /** On-disk size of the caller's memory rows (content, metadata, full-text document, vector). */
  storage_bytes: number;
  embedding: { provider: string; model: string; dimensions: number };
  /** `pgvector_hnsw` or `exact_real_array` (no pgvector on this server: exact but slower at scale). */
  vector_search: 'pgvector_hnsw' | 'exact_real_array';
}

/** Statistics of the caller's memories (optionally of one agent's). */
export async function memoryStats(
  ctx: AppContext,
  actor: SessionActor,
  f: { agent_id?: string } = {},
): Promise<MemoryStats> {
  await flushMemoryWrites(ctx);
  const where = filteredSql(actor, { ...f, kind: 'all' });
  const [[m], [s]] = await Promise.all([
    execRows<Record<string, unknown>>(
      ctx.db,
      sql`select count(*) as total,
            count(*) filter (where source = 'explicit') as explicit,
            count(*) filter (where source = 'execution') as execution,
            count(*) filter (where source = 'summary') as summary,
            count(distinct session_id) as sessions,
            min(created_at) as oldest, max(created_at) as newest,
            coalesce(sum(pg_column_size(memories.*)), 0) as bytes
          from memories where ${where}`,
    ),
    execRows<{ n: number | string }>(
      ctx.db,
      sql`select count(*) as n from session_summaries where user_id = ${actor.accountId}
          ${actor.agentId ? sql`and agent_id = ${actor.agentId}` : sql``} ${f.agent_id ? sql`and agent_id = ${f.agent_id}` : sql``}`,
    ),
  ]);
  const e = embeddingProviderOf(ctx);
  return {
    total_memories: Number(m.total),
    by_source: { explicit: Number(m.explicit), execution: Number(m.execution), summary: Number(m.summary) },
    sessions_with_memories: Number(m.sessions),
    summaries: Number(s.n),
    oldest_at: iso(m.oldest as string | null),
    newest_at: iso(m.newest as string | null),
    storage_bytes: Number(m.bytes),
    embedding: { provider: e.provider, model: e.model, dimensions: e.dimensions },
    vector_search: ctx.database.hasVector ? 'pgvector_hnsw' : 'exact_real_array',
  };
}
