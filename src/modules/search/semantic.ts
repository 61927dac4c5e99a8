/**
 * The semantic arm of tool search: plain-language questions ("who am I logged in as")
 * find tools whose words differ from the question's.
 *
 * - Encoder: Universal Sentence Encoder Lite (`lib/sentence-encoder.ts`, 512-d unit vectors, local
 *   weights, its own worker thread), one per application, started on first use.
 * - Tool vectors: each tool's {@link toolEmbeddingText} is embedded once and stored in `tool_vectors`
 *   (migration 0034) under the SHA-256 of model and text, so unchanged tools are not embedded again
 *   and identical texts (mirrored services) once. {@link refreshToolVectors} runs off the request
 *   path when the catalog changed ({@link catalogGeneration} after this instance's registry writes,
 *   else the catalog version every `CACHE_TTL_MS`), then loads every vector into memory
 *   ({@link ToolVectorIndex}); queries read the loaded index, never wait for a refresh.
 * - Query: the question's vector (a few ms in the worker; measured inside the search latency), the
 *   nearest tools by cosine (exact, brute force), those at {@link SEMANTIC_MIN_SIMILARITY} or more.
 * - Fusion with the full-text ranking: weighted reciprocal rank fusion ({@link fuseRanks}; Cormack,
 *   Clarke & Büttcher 2009, with k = {@link RRF_K}).
 */
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { AppContext } from '../../context.js';
import { execRows } from '../../db/client.js';
import { createSentenceEncoder, type SentenceEncoder } from '../../lib/sentence-encoder.js';
import { dot } from '../memory/embeddings.js';
import { catalogGeneration, catalogToolTexts, catalogVersion } from '../registry/catalog.js';
import { searchStateOf, type ToolVectorIndex } from './state.js';

/** Texts per encoder call and per insert while refreshing. */
export const EMBED_BATCH = 64;
/** Nearest tools the semantic arm contributes to the fusion. */
export const SEMANTIC_K = 30;
/** Query vectors kept per application (a repeated query skips the encoder: ~5–80 ms of worker time). */
export const QUERY_VECTOR_CACHE = 512;
/** Cosine similarity below which a tool is not a semantic neighbour (USE Lite: unrelated sentences score ~0–0.25). */
export const SEMANTIC_MIN_SIMILARITY = 0.3;
/**
 * Reciprocal rank fusion constant. Cormack et al. (2009) use 60 (so does the memory module); tool
 * search uses 10, chosen on the dev half of `bench:search-quality` with USE Lite (k 5 / 10 / 20 / 60
 * × weight 0.1–0.5: k 10 with weight 0.25 had the best dev MRR@10, 0.884 vs 0.870 for full text
 * alone and 0.811 at k 60, weight 0.5): a small k keeps the full-text head on top.
 */
export const RRF_K = 10;

/**
 * The text a tool is embedded from: its name split into words (`issues_create` → `issues create`,
 * camelCase split) and the first line of its description (at most 200 characters: the summary).
 */
export function toolEmbeddingText(tool: { name: string; description: string }): string {
  const words = tool.name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
    .toLowerCase();
  const summary = tool.description.trim().split('\n')[0].trim().slice(0, 200);
  return summary ? `${words}. ${summary}` : words;
}

/** The application's sentence encoder, started on first use and closed with the app. */
export function encoderOf(ctx: AppContext): SentenceEncoder {
  const state = searchStateOf(ctx);
  if (!state.encoder) {
    const enc = createSentenceEncoder();
    state.encoder = enc;
    ctx.onClose.push(() => enc.close());
  }
  return state.encoder;
}

function sourceHash(model: string, text: string): string {
  return createHash('sha256').update(`${model}\n${text}`).digest('hex');
}

/** A `bytea` value as read by either driver (bytes, or PostgreSQL's `\x…` hex text) → float32s. */
function vectorOf(raw: unknown): Float32Array {
  const bytes = typeof raw === 'string' ? Buffer.from(raw.replace(/^\\x/, ''), 'hex') : (raw as Uint8Array);
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

function hexOf(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex');
}

/** Store vectors; a row whose tool was deleted meanwhile is skipped (foreign key). */
async function storeVectors(
  ctx: AppContext,
  model: string,
  rows: Array<{ id: string; hash: string; vector: Float32Array }>,
): Promise<void> {
  const insert = (batch: typeof rows) =>
    execRows(
      ctx.db,
      sql`insert into tool_vectors (tool_id, model, source_hash, vector)
          values ${sql.join(
            batch.map((r) => sql`(${r.id}, ${model}, ${r.hash}, decode(${hexOf(r.vector)}, 'hex'))`),
            sql`, `,
          )}
          on conflict (tool_id) do update set model = excluded.model, source_hash = excluded.source_hash, vector = excluded.vector, updated_at = now()`,
    );
  try {
    await insert(rows);
  } catch {
    for (const r of rows) await insert([r]).catch(() => undefined);
  }
}

/** Load every stored vector of `model` into memory. */
async function loadIndex(
  ctx: AppContext,
  model: string,
  version: string,
  generation: number,
): Promise<ToolVectorIndex> {
  const rows = await execRows<{ tool_id: string; vector: unknown }>(
    ctx.db,
    sql`select tool_id, vector from tool_vectors where model = ${model} order by tool_id`,
  );
  const dims = rows.length ? vectorOf(rows[0].vector).length : 0;
  const ids: string[] = [];
  const matrix = new Float32Array(rows.length * dims);
  for (const r of rows) {
    const v = vectorOf(r.vector);
    if (v.length !== dims) continue;
    matrix.set(v, ids.length * dims);
    ids.push(r.tool_id);
  }
  return {
    model,
    version,
    generation,
    checkedAt: Date.now(),
    dims,
    ids,
    matrix: matrix.subarray(0, ids.length * dims),
  };
}

/**
 * Bring `tool_vectors` up to date with the catalog (embed new and changed tools, in batches of
 * {@link EMBED_BATCH}; reuse a stored vector of the same text), then load the index. One refresh at
 * a time per application: a call during a refresh returns that refresh.
 * @throws Error when the encoder cannot load (the caller logs it; search falls back to full text)
 */
export function refreshToolVectors(ctx: AppContext): Promise<void> {
  const state = searchStateOf(ctx);
  state.vectorRefresh ??= (async () => {
    const generation = catalogGeneration(ctx);
    const version = await catalogVersion(ctx);
    const enc = encoderOf(ctx);
    const stored = new Map(
      (
        await execRows<{ tool_id: string; source_hash: string }>(
          ctx.db,
          sql`select tool_id, source_hash from tool_vectors where model = ${enc.model}`,
        )
      ).map((r) => [r.tool_id, r.source_hash]),
    );
    const pending = new Map<string, { text: string; ids: string[] }>();
    for (let after = ''; ; ) {
      const rows = await catalogToolTexts(ctx, after, 5000);
      for (const r of rows) {
        const text = toolEmbeddingText(r);
        const hash = sourceHash(enc.model, text);
        if (stored.get(r.id) === hash) continue;
        const p = pending.get(hash) ?? { text, ids: [] };
        p.ids.push(r.id);
        pending.set(hash, p);
      }
      if (rows.length < 5000) break;
      after = rows[rows.length - 1].id;
    }
    const hashes = [...pending.keys()];
    for (let i = 0; i < hashes.length; i += EMBED_BATCH) {
      const batch = hashes.slice(i, i + EMBED_BATCH);
      const known = new Map(
        (
          await execRows<{ source_hash: string; vector: unknown }>(
            ctx.db,
            sql`select distinct on (source_hash) source_hash, vector from tool_vectors where model = ${enc.model} and source_hash in (${sql.join(
              batch.map((h) => sql`${h}`),
              sql`, `,
            )})`,
          )
        ).map((r) => [r.source_hash, vectorOf(r.vector)]),
      );
      const missing = batch.filter((h) => !known.has(h));
      const vectors = await enc.embed(missing.map((h) => pending.get(h)!.text));
      missing.forEach((h, j) => known.set(h, vectors[j]));
      await storeVectors(
        ctx,
        enc.model,
        batch.flatMap((h) => pending.get(h)!.ids.map((id) => ({ id, hash: h, vector: known.get(h)! }))),
      );
    }
    state.vectors = await loadIndex(ctx, enc.model, version, generation);
  })().finally(() => {
    state.vectorRefresh = undefined;
  });
  return state.vectorRefresh;
}

/**
 * The loaded index, after starting a refresh in the background when the catalog changed (a failed
 * refresh is logged; the stale index, or none, is used meanwhile).
 */
async function currentIndex(ctx: AppContext): Promise<ToolVectorIndex | undefined> {
  const state = searchStateOf(ctx);
  const idx = state.vectors;
  const generation = catalogGeneration(ctx);
  const now = Date.now();
  if (state.vectorRefresh || (idx && idx.generation === generation && now - idx.checkedAt < ctx.config.cacheTtlMs))
    return idx;
  const version = await catalogVersion(ctx);
  if (idx && idx.version === version) {
    idx.generation = generation;
    idx.checkedAt = now;
    return idx;
  }
  refreshToolVectors(ctx).catch((err: Error) => ctx.log.warn({ err: err.message }, 'tool vectors refresh failed'));
  return idx;
}

/**
 * Tools nearest to the question `q` by cosine similarity of sentence vectors, best first: at most
 * `k`, each at least {@link SEMANTIC_MIN_SIMILARITY}. Any tool, visible or not (the caller checks
 * visibility). Empty while no index is loaded.
 * @throws Error when the encoder fails
 */
export async function nearestTools(
  ctx: AppContext,
  q: string,
  k: number,
): Promise<Array<{ id: string; similarity: number }>> {
  const idx = await currentIndex(ctx);
  if (!idx || !idx.ids.length) return [];
  const v = await queryVector(ctx, q);
  const best: Array<{ id: string; similarity: number }> = [];
  for (let i = 0; i < idx.ids.length; i++) {
    const s = dot(v, idx.matrix.subarray(i * idx.dims, (i + 1) * idx.dims));
    if (s < SEMANTIC_MIN_SIMILARITY || (best.length === k && s <= best[k - 1].similarity)) continue;
    let j = best.length === k ? k - 1 : best.length;
    while (j > 0 && best[j - 1].similarity < s) {
      if (j < k) best[j] = best[j - 1];
      j--;
    }
    best[j] = { id: idx.ids[i], similarity: s };
    if (best.length > k) best.length = k;
  }
  return best;
}

/**
 * The sentence vector of a query, from the application's LRU of {@link QUERY_VECTOR_CACHE} queries
 * (keyed by the query with its white space collapsed) or the encoder.
 * @throws Error when the encoder fails
 */
async function queryVector(ctx: AppContext, q: string): Promise<Float32Array> {
  const state = searchStateOf(ctx);
  const cache = (state.queryVectors ??= new LRUCache<string, Float32Array>({ max: QUERY_VECTOR_CACHE }));
  const key = q.replace(/\s+/g, ' ').trim();
  const hit = cache.get(key);
  if (hit) return hit;
  const [v] = await encoderOf(ctx).embed([key]);
  cache.set(key, v);
  return v;
}

/**
 * Weighted reciprocal rank fusion: each id scores Σ weight / ({@link RRF_K} + rank) over the lists
 * it is in (rank from 1). Returns the scores by id.
 */
export function fuseRanks(lists: Array<{ ids: string[]; weight: number }>): Map<string, number> {
  const out = new Map<string, number>();
  for (const { ids, weight } of lists)
    ids.forEach((id, i) => out.set(id, (out.get(id) ?? 0) + weight / (RRF_K + i + 1)));
  return out;
}
