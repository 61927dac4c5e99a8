/**
 * The memory module's per-app runtime: the embedding provider and the batching writer of
 * automatic memories, the `execution.recorded` listener ({@link rememberExecution}), start-up
 * checks of the stored embedding space ({@link initMemory}) and the embedding back-fill (execution
 * memories are stored without a vector and embedded in the background: backfill.ts).
 */
import { eq, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows, rawJsonObject } from '../../db/client.js';
import { memorySettings } from '../../db/schema/index.js';
import { newId } from '../../http/ids.js';
import type { ExecutionRecorded } from '../../events.js';
import { createEmbeddingProvider, LocalHashEmbedder, type EmbeddingProvider } from './embeddings.js';
import { describeExecution } from './sentences.js';
import { embeddingText, previousText } from './turns.js';
import type { MemoryRuntime, NewMemoryRow } from './state.js';
import { HNSW_INDEX, vectorParam } from './store.js';
import { TextIndex } from './text-index.js';
import { VectorCache } from './vector-cache.js';
import { EmbeddingBackfill } from './backfill.js';
import { MemoryWriter } from './writer.js';
import { LRUCache } from 'lru-cache';

/**
 * Write the automatic memory of one execution (the `execution.recorded` listener wired in `app.ts`). Must add < 0.2 ms to the caller's request: it only
 * queues a reference; the sentence and insert happen in a batched flush off the request
 * path ({@link MemoryWriter}), the embedding later, when the process has time ({@link EmbeddingBackfill}). Never throws (logs failures). Idempotent per `executionId`.
 */
export function rememberExecution(ctx: AppContext, input: ExecutionRecorded): void {
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

function executionMemoryRow(e: ExecutionRecorded): NewMemoryRow {
  return {
    id: newId('mem'),
    userId: e.userId,
    sessionId: e.sessionId,
    agentId: e.agentId,
    serviceId: e.serviceId,
    toolId: e.toolId,
    executionId: e.executionId,
    source: 'execution',
    kind: 'execution',
    content: describeExecution(e),
    metadata: {
      service_name: e.serviceName,
      tool_name: e.toolName,
      status: e.status,
      http_status: e.httpStatus,
      duration_ms: Math.round(e.durationMs),
    },
  };
}

/** The per-app state (`ctx.memory`: embedding provider, batching writer), created on first use. */
function runtimeOf(ctx: AppContext): MemoryRuntime {
  if (ctx.memory) return ctx.memory;
  const embedder = createEmbeddingProvider(ctx.config.memory.embeddings);
  let markReady!: (err?: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = (err) => (err ? reject(err) : resolve());
  });
  ready.catch(() => undefined);
  const backfill = new EmbeddingBackfill((max) => embedMissing(ctx, max), ctx.log);
  const writer = new MemoryWriter(ctx, ready, () => backfill.kick());
  const rt: MemoryRuntime = {
    embedder,
    writer,
    backfill,
    ready,
    markReady,
    queryVectors: new LRUCache<string, Float32Array>({ max: QUERY_CACHE_SIZE }),
    vectors: vectorCacheFor(ctx, embedder.dimensions),
    text: ctx.database.engine === 'pglite' ? new TextIndex() : null,
  };
  ctx.memory = rt;
  // onClose runs in reverse order: the writer drains (embedding its last batch) before the provider closes
  if (embedder.close) ctx.onClose.push(() => embedder.close!());
  // (a store that keeps its earlier space swaps in a local embedder, which holds nothing to close)
  ctx.onClose.push(() => writer.drain());
  // …and before that the back-fill stops (what it has not embedded stays without a vector and is
  // embedded after the next start: `initMemory`)
  ctx.onClose.push(() => backfill.stop());
  return rt;
}

/** The in-process vector arm: on PGlite only, whose data directory this process alone writes (vector-cache.ts). */
function vectorCacheFor(ctx: AppContext, dimensions: number): VectorCache | null {
  return ctx.database.engine === 'pglite' ? new VectorCache(dimensions, VECTOR_CACHE_BYTES) : null;
}

/**
 * Keep a store's earlier default embedding space (`local-hash-v1`) when the provider is only the
 * default (the sentence encoder): its vectors are not comparable with the encoder's, and re-embedding
 * a large store at start-up takes minutes, so it is the operator's choice (`MEMORY_REEMBED=on`).
 */
function adoptStoredSpace(
  ctx: AppContext,
  rt: MemoryRuntime,
  space: { model: string; dimensions: number },
  stored: number,
): void {
  const previous = rt.embedder;
  rt.embedder = new LocalHashEmbedder(space.dimensions, space.model);
  rt.vectors = vectorCacheFor(ctx, space.dimensions);
  rt.queryVectors.clear();
  rt.vectorWeight = ctx.config.memory.fusion.localVectorWeight; // MEMORY_VECTOR_WEIGHT, else local's 0.2
  void previous.close?.();
  ctx.log.warn(
    { stored, model: space.model, dimensions: space.dimensions },
    `memory: ${stored} memories were embedded with the earlier default (local/${space.model}); this store keeps it. ` +
      'Set MEMORY_REEMBED=on once to re-embed them with the sentence encoder (the default for new stores).',
  );
}

/** The embedding provider of this app. */
export function embeddingProviderOf(ctx: AppContext): EmbeddingProvider {
  return runtimeOf(ctx).embedder;
}

/** Most bytes of users' vectors the in-process vector arm keeps (least recently searched users go first). */
const VECTOR_CACHE_BYTES = 64 * 1024 * 1024;

/** Query vectors kept per app by {@link embedQuery}. */
const QUERY_CACHE_SIZE = 512;

/**
 * The vector of a search query, from a per-app LRU of the last 512 queries (an agent or a UI repeats
 * its queries; a sentence-encoder query costs milliseconds of CPU in the worker, a remote one a round trip).
 * The vector is shared: callers must not change it.
 * @throws AppError upstream_error / upstream_timeout from the provider
 */
export async function embedQuery(ctx: AppContext, q: string): Promise<Float32Array> {
  const rt = runtimeOf(ctx);
  const hit = rt.queryVectors.get(q);
  if (hit) return hit;
  const [v] = await rt.embedder.embed([q], { query: true });
  rt.queryVectors.set(q, v);
  return v;
}

/** Memories were stored without a vector (e.g. after an embedding failure): have the background back-fill embed them. */
export function markNeedsBackfill(ctx: AppContext): void {
  runtimeOf(ctx).backfill.kick();
}

/**
 * Start-up: make the stored embedding space match the configured provider (DESIGN.md §3,
 * docs/adr/0096-memory-dimensions-the-configured-embedding-space.md). The first start records provider/model/dimensions; the pgvector column is
 * resized to the configured dimensions while no vectors are stored. A different model or dimension
 * count with vectors stored is an error naming the fix, unless `MEMORY_REEMBED=on`, which clears
 * every stored vector and has the background back-fill (backfill.ts) re-embed them after the app
 * starts ({@link settleMemoryEmbeddings} waits for it).
 * @throws Error with a one-line explanation on a mismatch
 */
export async function initMemory(ctx: AppContext): Promise<void> {
  const rt = runtimeOf(ctx);
  try {
    const want = { provider: rt.embedder.provider, model: rt.embedder.model, dimensions: rt.embedder.dimensions };
    const reembed = await ctx.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext('agent-platform:memory-embedding-space'))`);
      const [have] = await tx.select().from(memorySettings).where(eq(memorySettings.key, 'embedding'));
      const colType = (
        await execRows<{ t: string }>(
          tx,
          sql`select format_type(atttypid, atttypmod) as t from pg_attribute where attrelid = 'memories'::regclass and attname = 'embedding'`,
        )
      )[0]?.t;
      const colDims = colType?.startsWith('vector(') ? Number(colType.slice(7, -1)) : null;
      const sameSpace =
        have && have.provider === want.provider && have.model === want.model && have.dimensions === want.dimensions;
      const columnOk = !ctx.database.hasVector || colDims === want.dimensions;
      if (sameSpace && columnOk) return false;
      const [{ n }] = await execRows<{ n: number | string }>(
        tx,
        sql`select count(*) as n from memories where embedding is not null`,
      );
      const stored = Number(n);
      const earlierDefault = await earlierDefaultSpace(tx, have, colDims);
      if (stored > 0 && !ctx.config.memory.reembedOnStart && ctx.config.memory.embeddings.defaulted && earlierDefault) {
        adoptStoredSpace(ctx, rt, earlierDefault, stored);
        return false;
      }
      if (stored > 0 && !ctx.config.memory.reembedOnStart) {
        const from = have
          ? `${have.provider}/${have.model} (${have.dimensions} dimensions)`
          : `a ${colDims}-dimension model`;
        throw new Error(
          `Memory embeddings mismatch: ${stored} stored memories were embedded with ${from}, but the configuration asks for ` +
            `${want.provider}/${want.model} (${want.dimensions} dimensions). Restore the previous EMBEDDINGS_* settings, ` +
            `or set MEMORY_REEMBED=on to re-embed every memory at start-up.`,
        );
      }
      if (ctx.database.hasVector && colDims !== want.dimensions) {
        await tx.execute(sql`drop index if exists memories_embedding_hnsw_idx`);
        await tx.execute(
          sql.raw(`alter table memories alter column embedding type vector(${want.dimensions}) using null`),
        );
        await tx.execute(HNSW_INDEX);
      } else if (stored > 0) {
        await tx.execute(sql`update memories set embedding = null where embedding is not null`);
      }
      await tx
        .insert(memorySettings)
        .values({ key: 'embedding', ...want })
        .onConflictDoUpdate({ target: memorySettings.key, set: { ...want, updatedAt: new Date() } });
      if (stored > 0)
        ctx.log.warn(
          { stored, ...want },
          'memory embedding space changed: re-embedding every memory in the background',
        );
      return stored > 0;
    });
    // Re-embedding runs in the background (the back-fill loop, kicked below): a large store takes
    // minutes with the sentence encoder; meanwhile full text finds every memory and the vector arm
    // covers the ones already filled.
    if (reembed) rt.vectors?.forget();
    rt.markReady();
  } catch (err) {
    rt.markReady(err as Error);
    throw err;
  }
  // Memories stored while the provider was failing get their vectors in the background.
  const [missing] = await execRows<{ one: number }>(
    ctx.db,
    sql`select 1 as one from memories where embedding is null limit 1`,
  );
  if (missing) rt.backfill.kick();
}

/**
 * The local embedder's space a store was embedded in before the sentence encoder became the default:
 * the recorded `local` settings, or — for a store older than `memory_settings` — a 384/512-dimension
 * column or stored array. Null when the store holds another space.
 */
async function earlierDefaultSpace(
  tx: Parameters<typeof execRows>[0],
  have: { provider: string; model: string; dimensions: number } | undefined,
  colDims: number | null,
): Promise<{ model: string; dimensions: number } | null> {
  if (have)
    return have.provider === 'local' && (have.dimensions === 384 || have.dimensions === 512)
      ? { model: have.model, dimensions: have.dimensions }
      : null;
  const dims =
    colDims ??
    Number(
      (
        await execRows<{ d: number | null }>(
          tx,
          sql`select array_length(embedding, 1) as d from memories where embedding is not null limit 1`,
        )
      )[0]?.d,
    );
  return dims === 384 || dims === 512 ? { model: 'local-hash-v1', dimensions: dims } : null;
}

/** Rows per back-fill UPDATE on PGlite: each row's HNSW insertion runs on this thread (~2–3 ms). */
const PGLITE_BACKFILL_ROWS_PER_STATEMENT = 4;

/**
 * One back-fill step: embed up to `max` memories that have no vector, newest first (the ones a user
 * is likeliest to search for), in one provider call; the UPDATE only fills rows still without one,
 * so two instances back-filling the same rows never write twice, and the in-process vector arm gets
 * exactly the rows this step filled.
 * @returns how many memories without a vector it found (fewer than `max`: none is left)
 * @throws the provider's or the database's error
 */
export async function embedMissing(ctx: AppContext, max: number): Promise<number> {
  const rt = runtimeOf(ctx);
  // a note is embedded with the note before it in its stream (turns.ts)
  const rows = await execRows<{
    id: string;
    user_id: string;
    agent_id: string | null;
    kind: string;
    content: string;
    metadata: unknown;
    p_kind: string | null;
    p_content: string | null;
    p_metadata: unknown;
  }>(
    ctx.db,
    sql`select m.id, m.user_id, m.agent_id, m.kind, m.content, m.metadata,
               p.kind as p_kind, p.content as p_content, p.metadata as p_metadata
        from memories m
        left join lateral (
          select p.kind, p.content, p.metadata from memories p
          where m.kind = 'note' and p.user_id = m.user_id and (case when m.session_id is null then p.session_id is null else p.session_id = m.session_id end)
            and p.id < m.id order by p.id desc limit 1
        ) p on true
        where m.embedding is null order by m.id desc limit ${max}::int`,
  );
  if (rows.length === 0) return 0;
  const previous = (r: (typeof rows)[number]) =>
    r.p_kind === null || r.p_content === null ? null : previousText(r.p_kind, r.p_content, rawJsonObject(r.p_metadata));
  const vectors = await rt.embedder.embed(
    rows.map((r) => embeddingText(r.content, rawJsonObject(r.metadata), previous(r))),
  );
  const step = ctx.database.engine === 'pglite' ? PGLITE_BACKFILL_ROWS_PER_STATEMENT : rows.length;
  for (let at = 0; at < rows.length; at += step) {
    if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const part = rows.slice(at, at + step);
    const values = part.map((r, i) => sql`(${r.id}, ${vectorParam(ctx, vectors[at + i])})`);
    // asynchronous commit (hotDb): a vector a database crash forgets is simply embedded again
    const filled = await execRows<{ id: string }>(
      ctx.database.hotDb,
      sql`update memories m set embedding = v.e from (values ${sql.join(values, sql`, `)}) as v(id, e) where m.id = v.id and m.embedding is null returning m.id`,
    );
    if (rt.vectors && filled.length > 0) {
      const done = new Set(filled.map((f) => f.id));
      const kept = part.map((r, i) => [r, vectors[at + i]] as const).filter(([r]) => done.has(r.id));
      rt.vectors.added(
        kept.map(([r]) => ({ id: r.id, userId: r.user_id, agentId: r.agent_id, kind: r.kind })),
        kept.map(([, v]) => v),
      );
    }
  }
  return rows.length;
}

/**
 * What the memory writer still owes, for benchmarks and operators: execution memories queued in this
 * process (not yet inserted) and memories stored without a vector (all instances).
 */
export async function memoryBacklog(ctx: AppContext): Promise<{ queued: number; unembedded: number }> {
  const rt = runtimeOf(ctx);
  const [{ n }] = await execRows<{ n: number | string }>(
    ctx.db,
    sql`select count(*) as n from memories where embedding is null`,
  );
  return { queued: rt.writer.pending, unembedded: Number(n) };
}

/**
 * Wait until every queued execution memory is stored AND every memory has its vector (tests; a
 * caller that needs the vector arm to see what was just written). Readers that only need to find
 * the rows use {@link flushMemoryWrites}.
 * @throws the provider's or the database's error
 */
export async function settleMemoryEmbeddings(ctx: AppContext): Promise<void> {
  const rt = runtimeOf(ctx);
  await rt.writer.drain();
  await rt.backfill.settle();
}
