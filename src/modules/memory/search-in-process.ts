/**
 * Hybrid memory search with both arms in process, on the embedded engine (issue 21): the full-text
 * arm from the user's inverted index (text-index.ts) and the vector arm from the user's vectors
 * (vector-cache.ts), fused by the same weighted reciprocal rank fusion as the SQL statement of
 * `fusedCandidates` (store.ts) — same formula, same ranks, same order — then the fused candidates'
 * rows read by primary key. Two statements instead of a transaction of three or four, and none reads
 * every matching memory.
 *
 * The query's embedding runs in the encoder's worker thread meanwhile: the caller passes it as a
 * promise, and the text arm (a statement for the term weights, then the index) runs before it is
 * awaited, so the two overlap instead of adding up.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows, type Db, type Tx } from '../../db/client.js';
import { flatOrOperands, type TextHit, type TextIndex } from './text-index.js';
import { CANDIDATE_COLUMNS, candidateRow, distance, queryTerms, SAFE_LEXEME, type CandidateRow, type SearchMode } from './store.js';
import type { VectorCache } from './vector-cache.js';

/** Input of {@link inProcessCandidates}. */
export interface InProcessSearch {
  userId: string;
  /** Only memories of this agent (the agent principal's own id, or the `agent_id` filter). */
  agentId: string | null;
  /** The caller's scope and filters over `memories` (filteredSql): checked again on every row read. */
  where: SQL;
  query: string;
  /** The query's vector, being computed (awaited after the text arm). */
  vector: Promise<Float32Array>;
  pool: number;
  mode: SearchMode;
  text: TextIndex;
  vectors: VectorCache;
}

/**
 * The fused candidates of a search, best first, as `fusedCandidates` returns them (same scores,
 * ranks and order), computed in process; null when the query's full-text form is not a flat OR of
 * lexemes (then the SQL statement answers, text-index.ts).
 */
export async function inProcessCandidates(ctx: AppContext, db: Db | Tx, input: InProcessSearch): Promise<CandidateRow[] | null> {
  let textHits: TextHit[] = [];
  if (input.mode !== 'vector') {
    const qt = await queryTerms(db, input.userId, input.query);
    const items = flatOrOperands(qt.tsquery);
    if (items === null) return null;
    // the weights as the SQL arm inlines them: 6-decimal literals, unsafe lexemes left out
    const terms = qt.terms.filter((w) => SAFE_LEXEME.test(w.lexeme)).map((w) => ({ lexeme: w.lexeme, micro: Math.round(Number(w.idf.toFixed(6)) * 1e6) }));
    textHits = await input.text.search(db, input.userId, { terms, items, pool: input.pool, agentId: input.agentId, expectedCount: qt.docs });
  }
  const vector = await input.vector;
  const vectorHits = input.mode === 'text' ? [] : await input.vectors.nearest(db, input.userId, vector, input.pool, input.agentId);
  // weighted reciprocal rank fusion, as the SQL: vector weight / (k + rank), text weight / (k + rank),
  // where the text rank is the shared (fractional) rank of equal Σ IDF in hybrid mode
  const FUSION = ctx.config.memory.fusion;
  const vectorWeight = ctx.memory?.vectorWeight ?? FUSION.vectorWeight;
  const fused = new Map<string, { score: number; vr: number | null; tr: number | null }>();
  vectorHits.forEach((h, i) => fused.set(h.id, { score: vectorWeight / (FUSION.k + i + 1), vr: i + 1, tr: null }));
  for (const t of textHits) {
    const s = FUSION.textWeight / (FUSION.k + (input.mode === 'hybrid' ? t.fr : t.r));
    const have = fused.get(t.id);
    if (have) {
      have.score += s;
      have.tr = t.r;
    } else fused.set(t.id, { score: s, vr: null, tr: t.r });
  }
  if (fused.size === 0) return [];
  const ids = [...fused.keys()];
  // distances from the loaded vectors (reading 512-d vectors back from their TOAST table cost ~20 ms
  // for a pool of 100 at load ~13, bench/memory-profile.ts); in SQL when the user's are not loaded
  const known = input.vectors.distances(input.userId, vector, ids);
  const rows = await execRows<Record<string, unknown>>(
    db,
    sql`select m.id, ${known ? sql`null::float8` : distance(ctx, vector, sql`m.embedding`)} as distance, ${CANDIDATE_COLUMNS}
        from memories m where m.id = any(${idArray(ids)}::text[]) and ${input.where}`,
  );
  return rows
    .map((r) => {
      const f = fused.get(r.id as string)!;
      const d = known ? known.get(r.id as string) ?? null : r.distance;
      return candidateRow({ ...r, distance: d, score: f.score, vector_rank: f.vr, text_rank: f.tr });
    })
    .sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/**
 * Ids as one `text[]` literal parameter (one bind value instead of one per id). Ids come from the
 * user's own index and vectors (`<prefix>_<26 base32>`), so they need no quoting; anything else is
 * quoted as an array element.
 */
function idArray(ids: string[]): string {
  return `{${ids.map((id) => (/^[a-z]+_[0-9a-z]+$/.test(id) ? id : `"${id.replace(/["\\]/g, '\\$&')}"`)).join(',')}}`;
}
