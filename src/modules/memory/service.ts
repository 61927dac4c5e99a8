/**
 * User memory (spec group "Memory", issue 5; mem0/Zep-style): explicit and automatic memories with
 * embeddings, hybrid search (vector cosine + PostgreSQL full text, fused by reciprocal rank), session
 * summaries and timelines, agent context and statistics.
 *
 * Scoping: every function takes a {@link SessionActor} — the account (`accountOf(principal)`) and,
 * for an agent principal, the agent. Users see all memories of their account; an agent sees only
 * the memories that carry its own `agent_id` (docs/decisions.md), exactly as the sessions module
 * shows an agent only its own sessions. Another account's session is "not found".
 */
import { and, asc, count, desc, eq, gte, inArray, lt, lte, ne, sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { memories, memorySettings, sessionSummaries } from '../../db/schema/index.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { decodeCursor, encodeCursor, toPage, type Page } from '../../http/pagination.js';
import { getAgentForAccount } from '../agents/service.js';
import { getSessionFor, listSessionExecutions, listSessions, topTools, type SessionActor, type SessionView } from '../sessions/service.js';
import type { ExecutionRecord } from '../sessions/usage.js';
import { createEmbeddingProvider, type EmbeddingProvider } from './embeddings.js';
import { describeExecution } from './sentences.js';
import { fusedCandidates, HNSW_INDEX, insertMemoryRows, vectorParam, withSearchSettings, type NewMemoryRow, type SearchMode } from './store.js';
import { extractiveSummary, llmSummary, type BuiltSummary, type SummaryExecution } from './summarizer.js';
import { MemoryWriter } from './writer.js';

export type { SessionActor } from '../sessions/service.js';

// ------------------------------------------------------------------------------------ contract

/** One finished tool execution, as the executor reports it (contract with the sessions module). */
export interface ExecutionMemoryInput extends Omit<ExecutionRecord, 'id' | 'at'> {
  executionId: string;
  serviceName: string;
}

/**
 * Write the automatic memory of one execution. Must add < 0.2 ms to the caller's request: it only
 * queues a reference; the sentence, embedding and insert happen in a batched flush off the request
 * path ({@link MemoryWriter}). Never throws (logs failures). Idempotent per `executionId`.
 */
export function rememberExecution(ctx: AppContext, input: ExecutionMemoryInput): void {
  try {
    runtimeOf(ctx).writer.enqueue({ build: () => executionMemoryRow(input) });
  } catch (err) {
    try {
      ctx.log.error({ err: (err as Error).message }, 'rememberExecution failed');
    } catch {
      /* never throw */
    }
  }
}

/** Wait until every queued execution memory is stored (tests, shutdown, before reading a session). */
export async function flushMemoryWrites(ctx: AppContext): Promise<void> {
  await runtimeOf(ctx).writer.drain();
}

function executionMemoryRow(e: ExecutionMemoryInput): NewMemoryRow {
  return {
    id: newId('mem'),
    userId: e.userId,
    sessionId: e.sessionId,
    agentId: e.agentId,
    serviceId: e.serviceId,
    toolId: e.toolId,
    executionId: e.executionId,
    source: 'execution',
    content: describeExecution(e),
    metadata: { service_name: e.serviceName, tool_name: e.toolName, status: e.status, http_status: e.httpStatus, duration_ms: Math.round(e.durationMs) },
  };
}

// ------------------------------------------------------------------------------------- runtime

interface MemoryRuntime {
  embedder: EmbeddingProvider;
  writer: MemoryWriter;
  ready: Promise<void>;
  markReady(err?: Error): void;
}

const runtimes = new WeakMap<AppContext, MemoryRuntime>();

/** The per-app state (embedding provider, batching writer), created on first use. */
function runtimeOf(ctx: AppContext): MemoryRuntime {
  let rt = runtimes.get(ctx);
  if (rt) return rt;
  const embedder = createEmbeddingProvider(ctx.config.memory.embeddings);
  let markReady!: (err?: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = (err) => (err ? reject(err) : resolve());
  });
  ready.catch(() => undefined);
  const writer = new MemoryWriter(ctx, embedder, ready, () => backfillEmbeddings(ctx, 512), Math.min(ctx.config.memory.embeddings.batchSize, 256));
  rt = { embedder, writer, ready, markReady };
  runtimes.set(ctx, rt);
  ctx.onClose.push(() => writer.drain());
  return rt;
}

/** The embedding provider of this app. */
export function embeddingProviderOf(ctx: AppContext): EmbeddingProvider {
  return runtimeOf(ctx).embedder;
}

/**
 * Start-up: make the stored embedding space match the configured provider (DESIGN.md §3,
 * docs/decisions.md). The first start records provider/model/dimensions; the pgvector column is
 * resized to the configured dimensions while no vectors are stored. A different model or dimension
 * count with vectors stored is an error naming the fix, unless `MEMORY_REEMBED=on`, which re-embeds
 * every memory before the app starts.
 * @throws Error with a one-line explanation on a mismatch
 */
export async function initMemory(ctx: AppContext): Promise<void> {
  const rt = runtimeOf(ctx);
  try {
    const want = { provider: rt.embedder.provider, model: rt.embedder.model, dimensions: rt.embedder.dimensions };
    const reembed = await ctx.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext('agent-platform:memory-embedding-space'))`);
      const [have] = await tx.select().from(memorySettings).where(eq(memorySettings.key, 'embedding'));
      const colType = (await execRows<{ t: string }>(tx, sql`select format_type(atttypid, atttypmod) as t from pg_attribute where attrelid = 'memories'::regclass and attname = 'embedding'`))[0]?.t;
      const colDims = colType?.startsWith('vector(') ? Number(colType.slice(7, -1)) : null;
      const sameSpace = have && have.provider === want.provider && have.model === want.model && have.dimensions === want.dimensions;
      const columnOk = !ctx.database.hasVector || colDims === want.dimensions;
      if (sameSpace && columnOk) return false;
      const [{ n }] = await execRows<{ n: number | string }>(tx, sql`select count(*) as n from memories where embedding is not null`);
      const stored = Number(n);
      if (stored > 0 && !ctx.config.memory.reembedOnStart) {
        const from = have ? `${have.provider}/${have.model} (${have.dimensions} dimensions)` : `a ${colDims}-dimension model`;
        throw new Error(
          `Memory embeddings mismatch: ${stored} stored memories were embedded with ${from}, but the configuration asks for ` +
            `${want.provider}/${want.model} (${want.dimensions} dimensions). Restore the previous EMBEDDINGS_* settings, ` +
            `or set MEMORY_REEMBED=on to re-embed every memory at start-up.`,
        );
      }
      if (ctx.database.hasVector && colDims !== want.dimensions) {
        await tx.execute(sql`drop index if exists memories_embedding_hnsw_idx`);
        await tx.execute(sql.raw(`alter table memories alter column embedding type vector(${want.dimensions}) using null`));
        await tx.execute(HNSW_INDEX);
      } else if (stored > 0) {
        await tx.execute(sql`update memories set embedding = null where embedding is not null`);
      }
      await tx
        .insert(memorySettings)
        .values({ key: 'embedding', ...want })
        .onConflictDoUpdate({ target: memorySettings.key, set: { ...want, updatedAt: new Date() } });
      if (stored > 0) ctx.log.warn({ stored, ...want }, 'memory embedding space changed: re-embedding every memory');
      return stored > 0;
    });
    if (reembed) {
      while ((await backfillEmbeddings(ctx, 10_000)) > 0) {
        /* continue until every memory has a vector */
      }
    }
    rt.markReady();
  } catch (err) {
    rt.markReady(err as Error);
    throw err;
  }
  // Memories stored while the provider was failing get their vectors in the background.
  const [missing] = await execRows<{ one: number }>(ctx.db, sql`select 1 as one from memories where embedding is null limit 1`);
  if (missing) rt.writer.needsBackfill = true;
}

/**
 * Give up to `max` memories without a vector their embedding.
 * @returns how many are probably still missing (0 when the last batch was not full)
 */
export async function backfillEmbeddings(ctx: AppContext, max: number): Promise<number> {
  const { embedder } = runtimeOf(ctx);
  const batch = Math.min(ctx.config.memory.embeddings.batchSize, 256);
  let done = 0;
  while (done < max) {
    const rows = await execRows<{ id: string; content: string }>(ctx.db, sql`select id, content from memories where embedding is null order by id limit ${batch}::int`);
    if (rows.length === 0) return 0;
    const vectors = await embedder.embed(rows.map((r) => r.content));
    const values = rows.map((r, i) => sql`(${r.id}, ${vectorParam(ctx, vectors[i])})`);
    await ctx.db.execute(sql`update memories m set embedding = v.e from (values ${sql.join(values, sql`, `)}) as v(id, e) where m.id = v.id`);
    done += rows.length;
    if (rows.length < batch) return 0;
  }
  return 1;
}

// --------------------------------------------------------------------------------------- views

type MemoryRow = Pick<
  typeof memories.$inferSelect,
  'id' | 'userId' | 'sessionId' | 'agentId' | 'serviceId' | 'toolId' | 'executionId' | 'source' | 'content' | 'metadata' | 'createdAt'
>;

/** A memory as the API shows it. */
export interface MemoryView {
  id: string;
  content: string;
  source: 'explicit' | 'execution' | 'summary';
  session_id: string | null;
  agent_id: string | null;
  service_id: string | null;
  tool_id: string | null;
  execution_id: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
}

const MEMORY_COLUMNS = {
  id: memories.id,
  userId: memories.userId,
  sessionId: memories.sessionId,
  agentId: memories.agentId,
  serviceId: memories.serviceId,
  toolId: memories.toolId,
  executionId: memories.executionId,
  source: memories.source,
  content: memories.content,
  metadata: memories.metadata,
  createdAt: memories.createdAt,
};

function iso(d: Date | string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

function memoryView(r: MemoryRow): MemoryView {
  return {
    id: r.id,
    content: r.content,
    source: r.source as MemoryView['source'],
    session_id: r.sessionId,
    agent_id: r.agentId,
    service_id: r.serviceId,
    tool_id: r.toolId,
    execution_id: r.executionId,
    metadata: r.metadata ?? {},
    created_at: iso(r.createdAt)!,
  };
}

/** The caller's rows: the account, and for an agent its own agent id. */
function scoped(actor: SessionActor): SQL {
  return and(eq(memories.userId, actor.accountId), actor.agentId ? eq(memories.agentId, actor.agentId) : undefined)!;
}

/** Filters of the list endpoints. */
export interface MemoryFilter {
  session_id?: string;
  agent_id?: string;
  since?: string;
  until?: string;
}

function filtered(actor: SessionActor, f: MemoryFilter): SQL {
  return and(
    scoped(actor),
    f.session_id ? eq(memories.sessionId, f.session_id) : undefined,
    f.agent_id ? eq(memories.agentId, f.agent_id) : undefined,
    f.since ? gte(memories.createdAt, new Date(f.since)) : undefined,
    f.until ? lte(memories.createdAt, new Date(f.until)) : undefined,
  )!;
}

/** The same scope and filters as raw SQL over unqualified `memories` columns (search). */
function filteredSql(actor: SessionActor, f: MemoryFilter): SQL {
  const parts: SQL[] = [sql`user_id = ${actor.accountId}`];
  if (actor.agentId) parts.push(sql`agent_id = ${actor.agentId}`);
  if (f.session_id) parts.push(sql`session_id = ${f.session_id}`);
  if (f.agent_id) parts.push(sql`agent_id = ${f.agent_id}`);
  if (f.since) parts.push(sql`created_at >= ${new Date(f.since).toISOString()}::timestamptz`);
  if (f.until) parts.push(sql`created_at <= ${new Date(f.until).toISOString()}::timestamptz`);
  return sql.join(parts, sql` and `);
}

// ---------------------------------------------------------------------------------------- write

/** Input of `POST /memory`. */
export interface AddMemoryInput {
  content: string;
  session_id?: string;
  agent_id?: string;
  metadata?: Record<string, unknown>;
}

/** Largest serialised `metadata`, bytes. */
export const MAX_METADATA_BYTES = 8 * 1024;

/**
 * Store an explicit memory (embedded synchronously). The memory inherits the session's agent when
 * `agent_id` is not given; an agent's memories always carry its own id.
 * @throws AppError payload_too_large (content > MEMORY_MAX_CONTENT_BYTES, metadata > 8 KiB),
 *   validation_failed (blank content; agent_id differs from the session's agent), forbidden (an agent
 *   naming another agent), not_found (session or agent not the caller's), upstream_error (embedding)
 */
export async function addMemory(ctx: AppContext, actor: SessionActor, input: AddMemoryInput): Promise<MemoryView> {
  const max = ctx.config.memory.maxContentBytes;
  const bytes = Buffer.byteLength(input.content, 'utf8');
  if (bytes > max) throw new AppError('payload_too_large', `content is ${bytes} bytes; at most ${max} bytes (UTF-8) are accepted`);
  if (!input.content.trim()) throw new AppError('validation_failed', 'content must not be blank', { errors: [{ in: 'body', pointer: '/content', message: 'must not be blank' }] });
  const metadata = input.metadata ?? {};
  if (Buffer.byteLength(JSON.stringify(metadata), 'utf8') > MAX_METADATA_BYTES) {
    throw new AppError('payload_too_large', `metadata is larger than ${MAX_METADATA_BYTES} bytes of JSON`);
  }
  let agentId: string | null = actor.agentId;
  if (input.agent_id !== undefined) {
    if (actor.agentId && input.agent_id !== actor.agentId) throw new AppError('forbidden', 'An agent can only write memories under its own agent_id');
    if (!actor.agentId) agentId = (await getAgentForAccount(ctx, actor.accountId, input.agent_id)).id;
  }
  if (input.session_id !== undefined) {
    const s = await getSessionFor(ctx, actor, input.session_id);
    if (agentId === null) agentId = s.agentId;
    else if (s.agentId !== null && s.agentId !== agentId) {
      throw new AppError('validation_failed', "agent_id does not match the session's agent", { errors: [{ in: 'body', pointer: '/agent_id', message: "differs from the session's agent" }] });
    }
  }
  const [vector] = await runtimeOf(ctx).embedder.embed([input.content]);
  const row: NewMemoryRow = {
    id: newId('mem'),
    userId: actor.accountId,
    sessionId: input.session_id ?? null,
    agentId,
    serviceId: null,
    toolId: null,
    executionId: null,
    source: 'explicit',
    content: input.content,
    metadata,
  };
  const [ins] = await insertMemoryRows(ctx, ctx.db, [row], [vector]);
  return memoryView({ ...row, createdAt: new Date(ins.created_at) });
}

/**
 * Delete the caller's memories and session summaries (all, or one session's) and nobody else's.
 * Pending automatic memories of this instance are written first, so none reappears afterwards.
 * @throws AppError not_found when `session_id` is not a session of the caller
 */
export async function deleteMemories(ctx: AppContext, actor: SessionActor, q: { session_id?: string }): Promise<{ deleted: number; deleted_summaries: number }> {
  if (q.session_id) await getSessionFor(ctx, actor, q.session_id);
  await flushMemoryWrites(ctx);
  return ctx.db.transaction(async (tx) => {
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
}

// ----------------------------------------------------------------------------------------- read

/** The caller's memories, newest first, keyset-paginated. */
export async function listMemories(ctx: AppContext, actor: SessionActor, q: MemoryFilter & { limit?: number; cursor?: string }): Promise<Page<MemoryView>> {
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
export async function listMemoriesPaged(ctx: AppContext, actor: SessionActor, q: MemoryFilter & { page?: number; page_size?: number }): Promise<MemoryPage> {
  await flushMemoryWrites(ctx);
  const page = q.page ?? 1;
  const pageSize = q.page_size ?? 20;
  const where = filtered(actor, q);
  const [rows, [{ n }]] = await Promise.all([
    ctx.db.select(MEMORY_COLUMNS).from(memories).where(where).orderBy(desc(memories.id)).limit(pageSize).offset((page - 1) * pageSize),
    ctx.db.select({ n: count() }).from(memories).where(where),
  ]);
  const total = Number(n);
  return { data: rows.map(memoryView), page, page_size: pageSize, total, total_pages: Math.ceil(total / pageSize) };
}

// --------------------------------------------------------------------------------------- search

/** Query of `GET /memory/search`. */
export interface SearchInput {
  q: string;
  threshold?: number;
  limit?: number;
  session_id?: string;
  agent_id?: string;
  mode?: SearchMode;
}

/** A search hit: the memory, its fused score and its cosine similarity. */
export interface SearchHit extends MemoryView {
  /** Reciprocal-rank-fusion score (higher is better; comparable within one answer only). */
  score: number;
  /** Cosine similarity of the memory to the query, clamped to 0..1 (0 for a memory without a vector). */
  similarity: number;
  /** Rank in the vector arm / the full-text arm (null: not among that arm's candidates). */
  vector_rank: number | null;
  text_rank: number | null;
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
 * Hybrid search over the caller's memories: the nearest vectors (cosine) and the best full-text
 * matches, fused by weighted reciprocal rank (`config.memory.fusion`); then candidates with
 * `similarity < threshold` are dropped (counted in `filtered_count`) and the best `limit` returned.
 * @throws AppError validation_failed (blank q), upstream_error (remote embedding provider)
 */
export async function searchMemories(ctx: AppContext, actor: SessionActor, input: SearchInput): Promise<SearchResult> {
  const q = input.q.trim();
  if (!q) throw new AppError('validation_failed', 'q must not be empty', { errors: [{ in: 'query', pointer: '/q', message: 'must not be empty' }] });
  await flushMemoryWrites(ctx);
  const limit = input.limit ?? 10;
  const threshold = input.threshold ?? 0;
  const mode = input.mode ?? 'hybrid';
  const [vector] = await runtimeOf(ctx).embedder.embed([q]);
  const where = filteredSql(actor, input);
  const candidates = await withSearchSettings(ctx, actor.accountId, (tx) => fusedCandidates(ctx, tx, { userId: actor.accountId, where, query: q, vector, pool: poolSize(limit), mode }));
  const withSim = candidates.map((c) => ({ ...c, similarity: c.distance === null || Number.isNaN(c.distance) ? 0 : Math.min(1, Math.max(0, 1 - c.distance)) }));
  const kept = withSim.filter((c) => c.similarity >= threshold);
  const top = kept.slice(0, limit);
  return {
    data: top.map((c) => ({
      ...memoryView(c.row),
      score: Number(c.score.toFixed(8)),
      similarity: Number(c.similarity.toFixed(6)),
      vector_rank: c.vector_rank,
      text_rank: c.text_rank,
    })),
    query: q,
    mode,
    threshold,
    filtered_count: withSim.length - kept.length,
    vector_index: ctx.database.hasVector ? 'hnsw' : 'exact',
  };
}

// ---------------------------------------------------------------------------------------- stats

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
export async function memoryStats(ctx: AppContext, actor: SessionActor, f: { agent_id?: string } = {}): Promise<MemoryStats> {
  await flushMemoryWrites(ctx);
  const where = filteredSql(actor, f);
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
  const e = runtimeOf(ctx).embedder;
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

// ------------------------------------------------------------------------------------ summaries

/** A session summary as the API shows it. */
export interface SummaryView {
  id: string;
  session_id: string;
  agent_id: string | null;
  summary: string;
  key_points: string[];
  tools_used: BuiltSummary['tools_used'];
  execution_count: number;
  started_at: string | null;
  ended_at: string | null;
  generated_at: string;
  generator: 'extractive' | 'llm';
  model: string | null;
  memory_id: string | null;
}

type SummaryRow = typeof sessionSummaries.$inferSelect;

function summaryView(r: SummaryRow): SummaryView {
  return {
    id: r.id,
    session_id: r.sessionId,
    agent_id: r.agentId,
    summary: r.summary,
    key_points: r.keyPoints,
    tools_used: r.toolsUsed,
    execution_count: r.executionCount,
    started_at: iso(r.startedAt),
    ended_at: iso(r.endedAt),
    generated_at: iso(r.generatedAt)!,
    generator: r.generator as SummaryView['generator'],
    model: r.model,
    memory_id: r.memoryId,
  };
}

/** The summary of a session of the caller. @throws AppError not_found (session not the caller's, or no summary yet) */
export async function getSessionSummary(ctx: AppContext, actor: SessionActor, sessionId: string): Promise<SummaryView> {
  await getSessionFor(ctx, actor, sessionId);
  const [row] = await ctx.db.select().from(sessionSummaries).where(and(eq(sessionSummaries.sessionId, sessionId), eq(sessionSummaries.userId, actor.accountId)));
  if (!row) throw new AppError('not_found', 'This session has no summary yet; POST /memory/sessions/{id}/summarize builds one');
  return summaryView(row);
}

/** Most executions a summary reads (the newest are kept). */
const MAX_SUMMARY_EXECUTIONS = 5000;

/**
 * Build (or rebuild) the summary of a session: extractive, or by the configured chat model (falling
 * back to extractive when it fails). The summary text is also stored as a memory (source `summary`),
 * replacing the previous summary's memory.
 * @throws AppError not_found (session not the caller's)
 */
export async function summarizeSession(ctx: AppContext, actor: SessionActor, sessionId: string): Promise<SummaryView> {
  const session = await getSessionFor(ctx, actor, sessionId);
  await flushMemoryWrites(ctx);
  const execs: SummaryExecution[] = [];
  let cursor: string | undefined;
  const rawExecs = [];
  do {
    const page = await listSessionExecutions(ctx, actor.accountId, sessionId, { limit: 500, cursor });
    rawExecs.push(...page.data);
    cursor = page.next_cursor ?? undefined;
    if (rawExecs.length > MAX_SUMMARY_EXECUTIONS) rawExecs.splice(0, rawExecs.length - MAX_SUMMARY_EXECUTIONS);
  } while (cursor);
  const [notes, execMems] = await Promise.all([
    ctx.db
      .select({ content: memories.content, createdAt: memories.createdAt })
      .from(memories)
      .where(and(scoped(actor), eq(memories.sessionId, sessionId), eq(memories.source, 'explicit')))
      .orderBy(asc(memories.id))
      .limit(200),
    ctx.db
      .select({ executionId: memories.executionId, metadata: memories.metadata })
      .from(memories)
      .where(and(eq(memories.userId, actor.accountId), eq(memories.sessionId, sessionId), eq(memories.source, 'execution'))),
  ]);
  const serviceNames = new Map<string, string>();
  for (const m of execMems) if (typeof m.metadata?.service_name === 'string') serviceNames.set(m.executionId!, m.metadata.service_name);
  for (const e of rawExecs) {
    execs.push({
      id: e.id,
      serviceId: e.serviceId,
      serviceName: serviceNames.get(e.id) ?? e.serviceId,
      toolId: e.toolId,
      toolName: e.toolName,
      arguments: e.arguments ?? {},
      status: e.status as 'succeeded' | 'failed',
      httpStatus: e.httpStatus,
      output: e.output,
      error: e.error ?? null,
      durationMs: e.durationMs,
      createdAt: e.createdAt,
    });
  }
  const input = { sessionName: session.name, executions: execs, notes };
  let built = extractiveSummary(input);
  const llm = ctx.config.memory.summaryLlm;
  if (llm.url) {
    try {
      built = await llmSummary(llm, input, built);
    } catch (err) {
      ctx.log.warn({ err: (err as Error).message, session_id: sessionId }, 'summary model failed: using the extractive summary');
    }
  }
  const content = [built.summary, ...built.key_points.map((k) => `- ${k}`)].join('\n').slice(0, ctx.config.memory.maxContentBytes);
  let vector: Float32Array | null = null;
  try {
    [vector] = await runtimeOf(ctx).embedder.embed([content]);
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message }, 'embedding failed: storing the summary memory without a vector');
    runtimeOf(ctx).writer.needsBackfill = true;
  }
  const startedAt = execs[0]?.createdAt ?? session.createdAt;
  const endedAt = session.closedAt ?? execs[execs.length - 1]?.createdAt ?? null;
  const memoryId = newId('mem');
  const row = await ctx.db.transaction(async (tx) => {
    const [old] = await tx.select({ memoryId: sessionSummaries.memoryId }).from(sessionSummaries).where(eq(sessionSummaries.sessionId, sessionId));
    if (old?.memoryId) await tx.delete(memories).where(and(eq(memories.id, old.memoryId), eq(memories.userId, actor.accountId)));
    await insertMemoryRows(
      ctx,
      tx,
      [
        {
          id: memoryId,
          userId: actor.accountId,
          sessionId,
          agentId: session.agentId,
          serviceId: null,
          toolId: null,
          executionId: null,
          source: 'summary',
          content,
          metadata: { generator: built.generator, ...(built.model ? { model: built.model } : {}), execution_count: execs.length },
        },
      ],
      [vector],
    );
    const values = {
      id: newId('sum'),
      userId: actor.accountId,
      sessionId,
      agentId: session.agentId,
      summary: built.summary,
      keyPoints: built.key_points,
      toolsUsed: built.tools_used,
      executionCount: execs.length,
      startedAt,
      endedAt,
      generator: built.generator,
      model: built.model,
      memoryId,
      generatedAt: new Date(),
    };
    const { userId: _owner, sessionId: _session, ...update } = values;
    const [r] = await tx
      .insert(sessionSummaries)
      .values(values)
      .onConflictDoUpdate({ target: sessionSummaries.sessionId, set: update })
      .returning();
    return r;
  });
  return summaryView(row);
}

// ------------------------------------------------------------------------------------- timeline

/** One event of a session timeline. */
export interface TimelineEvent {
  type: 'execution' | 'memory' | 'summary';
  id: string;
  at: string;
  execution?: {
    service_id: string;
    tool_id: string;
    tool_name: string;
    status: 'succeeded' | 'failed';
    http_status: number | null;
    duration_ms: number;
    error: { code: string; message: string } | null;
    /** The automatic memory of this execution (null until written). */
    memory: string | null;
  };
  memory?: { source: 'explicit' | 'summary'; content: string; metadata: Record<string, unknown> };
  summary?: { summary: string; key_points: string[]; generator: 'extractive' | 'llm' };
}

/** Time-ordered key of an id (`<prefix>_<ulid>` → the ULID). */
function bodyOf(id: string): string {
  return id.slice(id.indexOf('_') + 1);
}

/**
 * Every event of a session in time order — executions (status, duration, their memory), explicit
 * memories, the summary — with cursor pagination over the merged stream.
 * @throws AppError not_found (session not the caller's), validation_failed (bad cursor)
 */
export async function sessionTimeline(ctx: AppContext, actor: SessionActor, sessionId: string, q: { limit?: number; cursor?: string }): Promise<Page<TimelineEvent>> {
  const session = await getSessionFor(ctx, actor, sessionId);
  const limit = q.limit ?? 50;
  const after = decodeCursor(q.cursor);
  const afterBody = after ? bodyOf(after) : null;
  await flushMemoryWrites(ctx);
  const [execPage, mems, [summary]] = await Promise.all([
    listSessionExecutions(ctx, actor.accountId, session.id, { limit: limit + 1, cursor: afterBody ? encodeCursor(`exe_${afterBody}`) : undefined }),
    ctx.db
      .select(MEMORY_COLUMNS)
      .from(memories)
      .where(
        and(
          scoped(actor),
          eq(memories.sessionId, session.id),
          ne(memories.source, 'execution'),
          afterBody ? sql`substr(${memories.id}, 5) > ${afterBody}` : undefined,
        ),
      )
      .orderBy(sql`substr(${memories.id}, 5)`)
      .limit(limit + 1),
    ctx.db.select().from(sessionSummaries).where(and(eq(sessionSummaries.sessionId, session.id), eq(sessionSummaries.userId, actor.accountId))),
  ]);
  const execIds = execPage.data.map((e) => e.id);
  const execMems = execIds.length
    ? await ctx.db
        .select({ executionId: memories.executionId, content: memories.content })
        .from(memories)
        .where(and(eq(memories.userId, actor.accountId), inArray(memories.executionId, execIds)))
    : [];
  const memOf = new Map(execMems.map((m) => [m.executionId!, m.content]));
  const events: TimelineEvent[] = [];
  for (const e of execPage.data) {
    events.push({
      type: 'execution',
      id: e.id,
      at: iso(e.createdAt)!,
      execution: {
        service_id: e.serviceId,
        tool_id: e.toolId,
        tool_name: e.toolName,
        status: e.status as 'succeeded' | 'failed',
        http_status: e.httpStatus,
        duration_ms: e.durationMs,
        error: e.error ?? null,
        memory: memOf.get(e.id) ?? null,
      },
    });
  }
  for (const m of mems) {
    if (summary && m.id === summary.memoryId) continue; // shown as the summary event
    events.push({ type: 'memory', id: m.id, at: iso(m.createdAt)!, memory: { source: m.source as 'explicit' | 'summary', content: m.content, metadata: m.metadata ?? {} } });
  }
  if (summary && (!afterBody || bodyOf(summary.id) > afterBody)) {
    events.push({ type: 'summary', id: summary.id, at: iso(summary.generatedAt)!, summary: { summary: summary.summary, key_points: summary.keyPoints, generator: summary.generator as 'extractive' | 'llm' } });
  }
  events.sort((a, b) => (bodyOf(a.id) < bodyOf(b.id) ? -1 : bodyOf(a.id) > bodyOf(b.id) ? 1 : a.id < b.id ? -1 : 1));
  return toPage(events.slice(0, limit + 1), limit, (e) => e);
}

// -------------------------------------------------------------------------------- agent context

/** Answer of `GET /memory/context/agent`. */
export interface AgentContext {
  agent_id: string | null;
  query: string | null;
  relevant_memories: Array<MemoryView & { score?: number; similarity?: number }>;
  recent_sessions: Array<SessionView & { summary: SummaryView | null }>;
  frequent_tools: Array<{ service_id: string; tool_id: string; tool_name: string; calls: number; successes: number; failures: number; success_rate: number; avg_duration_ms: number }>;
  stats: MemoryStats;
}

/**
 * What an agent should know before acting, in one call: memories relevant to `q` (or the newest
 * when no `q`), recent sessions with their summaries, the most used tools with success rates, and
 * memory statistics. The parts are fetched concurrently.
 */
export async function agentContext(ctx: AppContext, actor: SessionActor, q: { q?: string; agent_id?: string; limit?: number }): Promise<AgentContext> {
  const agentId = actor.agentId ?? q.agent_id ?? null;
  const limit = q.limit ?? 10;
  const query = q.q?.trim() ? q.q.trim() : null;
  const filter = { agent_id: agentId ?? undefined };
  const [relevant, sessions, tools, stats] = await Promise.all([
    query
      ? searchMemories(ctx, actor, { q: query, limit, ...filter }).then((r) => r.data.map(({ vector_rank: _v, text_rank: _t, ...h }) => h))
      : listMemories(ctx, actor, { limit, ...filter }).then((p) => p.data),
    listSessions(ctx, actor, { limit: 5, ...(agentId ? { agent_id: agentId } : {}) }),
    topTools(ctx, { userId: actor.accountId, ...(agentId ? { agentId } : {}), limit: 5 }),
    memoryStats(ctx, actor, filter),
  ]);
  const ids = sessions.data.map((s) => s.id);
  const sums = ids.length
    ? await ctx.db.select().from(sessionSummaries).where(and(eq(sessionSummaries.userId, actor.accountId), inArray(sessionSummaries.sessionId, ids)))
    : [];
  const sumOf = new Map(sums.map((s) => [s.sessionId, summaryView(s)]));
  return {
    agent_id: agentId,
    query,
    relevant_memories: relevant,
    recent_sessions: sessions.data.map((s) => ({ ...s, summary: sumOf.get(s.id) ?? null })),
    frequent_tools: tools.map((t) => ({
      service_id: t.service_id,
      tool_id: t.tool_id,
      tool_name: t.tool_name,
      calls: t.calls,
      successes: t.successes,
      failures: t.failures,
      success_rate: t.calls ? Number((t.successes / t.calls).toFixed(4)) : 0,
      avg_duration_ms: t.avg_duration_ms,
    })),
    stats,
  };
}
