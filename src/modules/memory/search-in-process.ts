/**
 * Memory search with both arms in process, on the embedded engine: the full-text arm from the
 * user's inverted index (text-index.ts) and the vector arm from the user's vectors (vector-cache.ts),
 * each arm's candidates as `fusedCandidates` (store.ts) returns them in SQL — the same Σ IDF text
 * scores, the same ranks — then ranked (ranking.ts) with the facts the text index keeps of every
 * memory (time, "mentions a time", neighbours) and the distances of the loaded vectors; a
 * neighbour that is not a candidate is scored from the same indexes. Only the rows of the page
 * returned are read, by primary key under the caller's scope. None of the statements reads every
 * matching memory.
 *
 * The query's embedding runs in the encoder's worker thread meanwhile: the caller passes it as a
 * promise, and the text arm (a statement for the term weights, then the index) runs before it is
 * awaited, so the two overlap instead of adding up.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import type { Db, Tx } from '../../db/client.js';
import { memoryRows } from './statements.js';
import { flatOrOperands, type TextHit, type TextIndex, type TextTerm } from './text-index.js';
import {
  CANDIDATE_COLUMNS,
  candidateRow,
  distance,
  queryTerms,
  SAFE_LEXEME,
  type CandidateRow,
  type SearchMode,
} from './store.js';
import { rowFacts, type TurnFacts } from './turn-facts.js';
import { rankCandidates, similarityOf, type NeighbourScores } from './ranking.js';
import type { VectorCache } from './vector-cache.js';

export { similarityOf };

/** Input of {@link inProcessCandidates}. */
export interface InProcessSearch {
  userId: string;
  /** Only memories of this agent (the agent principal's own id, or the `agent_id` filter). */
  agentId: string | null;
  /** Only memories of these kinds (kinds.ts `kindMask`). */
  kinds: number;
  /** The caller's scope and filters over `memories` (filteredSql): checked again on every row read. */
  where: SQL;
  query: string;
  /** The query's vector, being computed (awaited after the text arm). */
  vector: Promise<Float32Array>;
  pool: number;
  mode: SearchMode;
  text: TextIndex;
  vectors: VectorCache;
  /** Filled with each arm's candidates and time when given (the `memory.search` span; absent when tracing is off). */
  arms?: SearchArms;
}

/** What each arm of one search found and how long it took (the `memory.search` span's attributes). */
export interface SearchArms {
  /** Candidates of the full-text arm (null: the arm did not run). */
  textCandidates: number | null;
  /** The query's terms and the text arm, milliseconds. */
  textMs: number | null;
  /** Candidates of the vector arm (null: the arm did not run). */
  vectorCandidates: number | null;
  /** The vector arm's scan, milliseconds (not the wait for the query's embedding). */
  vectorMs: number | null;
}

/** A candidate without its row: `fusedCandidates`'s fields but `row`. */
export type FusedHit = Omit<CandidateRow, 'row'>;

/**
 * The candidates of a search as `fusedCandidates` returns them (same text scores, ranks and order,
 * without the rows), computed in process, with the query's vector, its weighted terms and whether
 * the distances are known (from the loaded vectors; an id without a vector has distance null); null
 * when the query's full-text form is not a flat OR of lexemes (then the SQL statement answers,
 * text-index.ts).
 */
export async function inProcessCandidates(
  _ctx: AppContext,
  db: Db | Tx,
  input: InProcessSearch,
): Promise<{ hits: FusedHit[]; vector: Float32Array; distances: boolean; terms: TextTerm[] } | null> {
  let textHits: TextHit[] = [];
  let terms: TextTerm[] = [];
  const arms = input.arms;
  let t0 = arms ? performance.now() : 0;
  if (input.mode !== 'vector') {
    const qt = await queryTerms(db, input.userId, input.query);
    const items = flatOrOperands(qt.tsquery);
    if (items === null) return null;
    // the weights as the SQL arm inlines them: 6-decimal literals, unsafe lexemes left out
    terms = qt.terms
      .filter((w) => SAFE_LEXEME.test(w.lexeme))
      .map((w) => ({ lexeme: w.lexeme, micro: Math.round(Number(w.idf.toFixed(6)) * 1e6) }));
    textHits = await input.text.search(db, input.userId, {
      terms,
      items,
      pool: input.pool,
      agentId: input.agentId,
      expectedCount: qt.docs,
      kinds: input.kinds,
    });
    if (arms) [arms.textCandidates, arms.textMs] = [textHits.length, performance.now() - t0];
  }
  const vector = await input.vector;
  if (arms) t0 = performance.now();
  const vectorHits =
    input.mode === 'text'
      ? []
      : await input.vectors.nearest(db, input.userId, vector, input.pool, input.agentId, input.kinds);
  if (arms && input.mode !== 'text')
    [arms.vectorCandidates, arms.vectorMs] = [vectorHits.length, performance.now() - t0];
  const merged = new Map<string, FusedHit>();
  vectorHits.forEach((h, i) =>
    merged.set(h.id, { id: h.id, score: 0, distance: null, vector_rank: i + 1, text_rank: null }),
  );
  for (const t of textHits) {
    const have = merged.get(t.id);
    if (have) {
      have.score = t.bm / 1e6;
      have.text_rank = t.r;
    } else merged.set(t.id, { id: t.id, score: t.bm / 1e6, distance: null, vector_rank: null, text_rank: t.r });
  }
  const hits = [...merged.values()];
  // a vector candidate outside the text arm's pool is scored on the query terms it holds too, not 0
  // (as fusedCandidates does in SQL): the ranking normalises every candidate's text score
  const unscored = terms.length ? hits.filter((h) => h.text_rank === null).map((h) => h.id) : [];
  if (unscored.length) {
    const scored = input.text.scoreRows(input.userId, terms, unscored, input.agentId);
    if (scored === null) return null;
    for (const h of hits) if (h.text_rank === null) h.score = (scored.get(h.id)?.micro ?? 0) / 1e6;
  }
  // distances from the loaded vectors (reading 512-d vectors back from their TOAST table is the slow
  // part of a pool's scoring, bench/memory-profile.ts); left null when the user's are not loaded
  const known = hits.length
    ? input.vectors.distances(
        input.userId,
        vector,
        hits.map((h) => h.id),
      )
    : new Map<string, number>();
  if (known) for (const h of hits) h.distance = known.get(h.id) ?? null;
  hits.sort(byScore);
  return { hits, vector, distances: known !== null, terms };
}

/** `fusedCandidates`'s order: text score descending, then the text arm's rank, then id descending. */
function byScore(a: FusedHit, b: FusedHit): number {
  return (
    b.score - a.score ||
    (a.text_rank ?? Infinity) - (b.text_rank ?? Infinity) ||
    (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
  );
}

/** A page of a search: the best `limit` candidates at or above the threshold, and how many were below it. */
export interface SearchPage<T> {
  top: Array<T & { similarity: number }>;
  /** Candidates dropped because their similarity was below the threshold. */
  filteredCount: number;
}

/** Candidates (best first) with `similarity < threshold` dropped, then the first `limit`. */
export function pageOf<T extends { distance: number | null }>(
  candidates: T[],
  threshold: number,
  limit: number,
): SearchPage<T> {
  const withSim = candidates.map((c) => ({ ...c, similarity: similarityOf(c.distance) }));
  const kept = withSim.filter((c) => c.similarity >= threshold);
  return { top: kept.slice(0, limit), filteredCount: withSim.length - kept.length };
}

/**
 * A whole search in process ({@link inProcessCandidates}, then ranking.ts with the text index's
 * facts and neighbours, then `threshold` and `limit`), reading only the rows of the page: by
 * primary key under the caller's `where`. A row that is gone (deleted behind the indexes' back, or
 * outside `where`) leaves the candidates and the page is ranked again without it, so the page holds
 * only rows the caller may see, as many as the candidates allow; a candidate the text index does
 * not hold alive is dropped before ranking, as a missing row was. When the facts or the distances
 * are not in memory (the user's index evicted meanwhile, or `text` mode before the user's vectors
 * are loaded), every candidate's row is read with its distance first (the SQL distance). Null when
 * the query is not a flat OR of lexemes (the SQL statement answers then).
 */
export async function searchInProcess(
  ctx: AppContext,
  db: Db | Tx,
  input: InProcessSearch & { limit: number; threshold: number; now?: Date },
): Promise<SearchPage<CandidateRow> | null> {
  const fused = await inProcessCandidates(ctx, db, input);
  if (!fused) return null;
  const now = input.now ?? new Date();
  const neighbours = (ids: string[]) => input.text.neighbours(input.userId, ids);
  const hybrid = input.mode === 'hybrid';
  const facts = hybrid
    ? input.text.facts(
        input.userId,
        fused.hits.map((h) => h.id),
      )
    : new Map<string, TurnFacts>();
  const base = { mode: input.mode, now, neighbours, where: input.where };
  if (!facts || !fused.distances) {
    const all = await readRows(
      ctx,
      db,
      input.where,
      fused.hits.map((h) => h.id),
      fused.distances ? null : fused.vector,
    );
    const rows = fused.hits.flatMap((h) => {
      const r = all.get(h.id);
      return r
        ? [
            {
              ...r,
              score: h.score,
              distance: fused.distances ? h.distance : r.distance,
              vector_rank: h.vector_rank,
              text_rank: h.text_rank,
            },
          ]
        : [];
    });
    const ranked = await rankCandidates(ctx, db, input.userId, input.query, rows, {
      ...base,
      facts: (c) => rowFacts(c.row),
    });
    return pageOf(ranked, input.threshold, input.limit);
  }
  const neighbourScores: NeighbourScores = (ids) => {
    const scored = input.text.scoreRows(input.userId, fused.terms, ids, input.agentId);
    const d = input.vectors.distances(input.userId, fused.vector, ids);
    return new Map(
      [...(scored ?? [])].map(([id, s]) => [id, { text: s.micro / 1e6, distance: d?.get(id) ?? null, facts: s.facts }]),
    );
  };
  // (a vector of a memory deleted behind the vector cache's back, e.g. a replaced summary's, is not in the index)
  let live = hybrid ? fused.hits.filter((h) => facts.has(h.id)) : fused.hits;
  const read = new Map<string, CandidateRow>();
  for (;;) {
    const ranked = await rankCandidates(ctx, db, input.userId, input.query, live, {
      ...base,
      facts: (c) => facts.get(c.id)!,
      neighbourScores,
    });
    const page = pageOf(ranked, input.threshold, input.limit);
    const want = page.top.map((c) => c.id).filter((id) => !read.has(id));
    for (const [id, r] of await readRows(ctx, db, input.where, want, null)) read.set(id, r);
    const gone = new Set(want.filter((id) => !read.has(id)));
    if (gone.size === 0) {
      return { top: page.top.map((c) => ({ ...c, row: read.get(c.id)!.row })), filteredCount: page.filteredCount };
    }
    live = live.filter((h) => !gone.has(h.id));
  }
}

/**
 * The rows of `ids` that `where` admits, by primary key, with the SQL distance to `vector` when
 * one is given (else null).
 */
async function readRows(
  ctx: AppContext,
  db: Db | Tx,
  where: SQL,
  ids: string[],
  vector: Float32Array | null,
): Promise<Map<string, CandidateRow>> {
  if (ids.length === 0) return new Map();
  // a named prepared statement on PGlite (statements.ts): one text per filter shape, planned once
  const rows = await memoryRows<Record<string, unknown>>(
    db,
    sql`select m.id, ${vector ? distance(ctx, vector, sql`m.embedding`) : sql`null::float8`} as distance, ${CANDIDATE_COLUMNS}
        from memories m where m.id = any(${idArray(ids)}::text[]) and ${where}`,
  );
  return new Map(
    rows.map((r) => [r.id as string, candidateRow({ ...r, score: 0, vector_rank: null, text_rank: null })]),
  );
}

/**
 * Ids as one `text[]` literal parameter (one bind value instead of one per id). Ids come from the
 * user's own index and vectors (`<prefix>_<26 base32>`), so they need no quoting; anything else is
 * quoted as an array element.
 */
function idArray(ids: string[]): string {
  return `{${ids.map((id) => (/^[a-z]+_[0-9a-z]+$/.test(id) ? id : `"${id.replace(/["\\]/g, '\\$&')}"`)).join(',')}}`;
}
