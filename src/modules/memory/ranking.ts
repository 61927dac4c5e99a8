/**
 * The ranking of memory search, on both engines: each candidate of the two arms (full text: Σ IDF
 * of the query terms it holds; vector: cosine similarity) gets a relevance in 0..1, then — in hybrid
 * mode — a time factor and a share of its better neighbouring memory's relevance.
 *
 * Chosen on real multi-session conversations (LoCoMo, bench/memory-locomo.ts, leave-one-conversation-
 * out; docs/adr/0941-memory-ranking-on-real-conversations.md), where it replaced weighted reciprocal
 * rank fusion (which lost to plain BM25 there):
 *
 * 1. Linear fusion of normalised scores: `(text / best text + w × similarity) / (1 + w)`, `w` =
 *    `MEMORY_VECTOR_WEIGHT` (2 with the sentence encoder). Rank fusion threw away how far apart the
 *    text scores are; with Σ IDF the lexical match decides and the encoder separates its ties. A
 *    candidate only the vector arm found has its own Σ IDF too, not 0 (store.ts, search-in-process.ts;
 *    docs/adr/0945-memory-vector-candidates-keep-their-text-score.md).
 * 2. Time (time.ts, `MEMORY_TIME_BOOST`): a "when …" question scales the memories that mention no
 *    time by 1 / (1 + boost); a period named in the query ("last May") scales the memories that
 *    did not happen in it (`occurred_at`, else `created_at`) the same way.
 * 3. Neighbours (`MEMORY_NEIGHBOUR_WEIGHT`), for conversation turns (turn-facts.ts `turnSpeaker`:
 *    `metadata.speaker`, or content starting with "Name: "): `(r' + λ × max(r of the previous, next
 *    turn)) / (1 + λ)`, where neighbours are the adjacent memories of the same stream — the same
 *    session, or the memories without one — in id (time) order, executions apart, counted only
 *    when they are turns too; other memories get `r / (1 + λ)`. In a conversation the answer is
 *    often the reply to the turn that matches the question's words; unrelated notes stored one
 *    after the other must not lift each other.
 * 4. Question turns (`MEMORY_QUESTION_PENALTY`, p): `r' = r / (1 + p)` for a turn that is mainly a
 *    question (turn-facts.ts `asksMainly`), else `r' = r`. "That sounds awesome! What did you take
 *    away from it?" shares the words of a question about the book, but the reply after it holds the
 *    answer; as a neighbour the question turn still counts its full `r`, so it lifts that reply
 *    (docs/adr/0974-memory-question-turns.md).
 *
 * The result is the API's `score`: 0..1, higher is better, the same scale for every query.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows, type Db, type Tx } from '../../db/client.js';
import { asksWhen, timeRange, type TimeRange } from './time.js';
import type { SearchMode } from './store.js';
import type { TurnFacts } from './turn-facts.js';

/** What the ranking reads of a candidate: its id, Σ IDF text score (0: not a text match) and cosine distance. */
export interface RankedInput {
  id: string;
  /** Σ IDF of the query terms it holds (a vector-arm candidate outside the text arm's pool too; 0 in `vector` mode). */
  score: number;
  /** Cosine distance to the query (null: no vector). */
  distance: number | null;
  /** Position in the text arm (Σ IDF, then `ts_rank`): breaks ties of the relevance. */
  text_rank?: number | null;
}

/** Facts and scores of neighbours that are not candidates (in process: from the indexes), by id. */
export type NeighbourScores = (
  ids: string[],
) => Map<string, { text: number; distance: number | null; facts: TurnFacts }>;

/** Options of {@link rankCandidates}. */
export interface RankOptions<T> {
  mode: SearchMode;
  /** Facts of a candidate (time, stream). */
  facts: (c: T) => TurnFacts;
  now?: Date;
  /** Adjacent memories of each id in its stream (in process: text-index.ts); null/absent → SQL under `where`. */
  neighbours?: (ids: string[]) => Map<string, { prev: string | null; next: string | null }> | null;
  /** Scores of neighbours that are not candidates; absent → they count 0. */
  neighbourScores?: NeighbourScores;
  /** The caller's scope and filters over `memories` (the SQL neighbours are read among them). */
  where: SQL;
}

/** Cosine similarity of a distance, clamped to 0..1; 0 without a vector. */
export function similarityOf(d: number | null): number {
  return d === null || Number.isNaN(d) ? 0 : Math.min(1, Math.max(0, 1 - d));
}

/**
 * Rank candidates (see the module comment), best first, ties by the text arm's rank, then id
 * descending (newest first); each
 * comes back with `score` replaced by its relevance (0..1). Pure re-ordering: no candidate is added
 * or removed.
 */
export async function rankCandidates<T extends RankedInput>(
  ctx: AppContext,
  db: Db | Tx,
  userId: string,
  query: string,
  candidates: T[],
  opts: RankOptions<T>,
): Promise<Array<T & { score: number }>> {
  const { neighbourWeight, timeBoost, questionPenalty } = ctx.config.memory.fusion;
  const w =
    opts.mode === 'text'
      ? 0
      : opts.mode === 'vector'
        ? 1
        : (ctx.memory?.vectorWeight ?? ctx.config.memory.fusion.vectorWeight);
  const tw = opts.mode === 'vector' ? 0 : 1;
  const best = candidates.reduce((m, c) => Math.max(m, c.score), 0);
  const hybrid = opts.mode === 'hybrid';
  const when = hybrid && timeBoost > 0 && asksWhen(query);
  const range = hybrid && timeBoost > 0 ? timeRange(query, opts.now ?? new Date()) : null;
  const relevance = (text: number, distance: number | null, f: TurnFacts | null) => {
    const r = tw + w > 0 ? (tw * (best > 0 ? Math.min(1, text / best) : 0) + w * similarityOf(distance)) / (tw + w) : 0;
    return f ? r * timeFactor(f, when, range, timeBoost) : r;
  };
  const own = new Map<string, number>();
  const turns = new Set<string>();
  const asking = new Set<string>();
  for (const c of candidates) {
    const f = hybrid ? opts.facts(c) : null;
    own.set(c.id, relevance(c.score, c.distance, f));
    if (f?.speaker != null) turns.add(c.id);
    if (f?.speaker != null && f.asks && questionPenalty > 0) asking.add(c.id);
  }
  // a turn that asks: its own part scaled down (a neighbour still counts its full relevance)
  const mine = (id: string) => (asking.has(id) ? own.get(id)! / (1 + questionPenalty) : own.get(id)!);
  const final = new Map(candidates.map((c) => [c.id, mine(c.id)]));
  if (hybrid && neighbourWeight > 0 && candidates.length > 0) {
    const ids = [...turns];
    const near =
      ids.length === 0
        ? new Map<string, { prev: string | null; next: string | null }>()
        : (opts.neighbours?.(ids) ?? (await sqlNeighbours(db, userId, opts.where, ids)));
    const missing = [
      ...new Set(
        [...near.values()].flatMap((n) => [n.prev, n.next]).filter((id): id is string => id !== null && !own.has(id)),
      ),
    ];
    const others = new Map<string, number>();
    if (missing.length && opts.neighbourScores) {
      for (const [id, s] of opts.neighbourScores(missing))
        if (s.facts.speaker !== null) others.set(id, relevance(s.text, s.distance, s.facts));
    }
    const scoreOf = (id: string | null) => (id === null ? 0 : turns.has(id) ? own.get(id)! : (others.get(id) ?? 0));
    for (const c of candidates) {
      const n = near.get(c.id);
      final.set(
        c.id,
        (mine(c.id) + (n ? neighbourWeight * Math.max(scoreOf(n.prev), scoreOf(n.next)) : 0)) / (1 + neighbourWeight),
      );
    }
  }
  return candidates
    .map((c) => ({ ...c, score: final.get(c.id)! }))
    .sort(
      (a, b) =>
        b.score - a.score ||
        (a.text_rank ?? Infinity) - (b.text_rank ?? Infinity) ||
        (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
    );
}

/**
 * The time factor of a candidate: × 1 / (1 + `timeBoost`) when the query asks "when …" and the memory
 * mentions no time, and again when the query names a period the memory did not happen in
 * (`occurred_at`, else `created_at`; time.ts); else 1.
 */
function timeFactor(f: TurnFacts, when: boolean, range: TimeRange | null, boost: number): number {
  let x = 1;
  if (when && !f.mentionsTime()) x /= 1 + boost;
  if (range && !(f.at >= range.from.getTime() && f.at < range.to.getTime())) x /= 1 + boost;
  return x;
}

/**
 * The memories before and after each of `ids` in its stream (the same session, or none; executions
 * apart from the other kinds), among those `where` admits, by id: two index probes per id
 * (`memories_user_idx`, backwards and forwards from the id).
 */
async function sqlNeighbours(
  db: Db | Tx,
  userId: string,
  where: SQL,
  ids: string[],
): Promise<Map<string, { prev: string | null; next: string | null }>> {
  const same = sql`m.user_id = h.user_id and (case when h.session_id is null then m.session_id is null else m.session_id = h.session_id end)
                   and (m.kind = 'execution') = (h.kind = 'execution') and ${where}`;
  const rows = await execRows<{ id: string; prev: string | null; next: string | null }>(
    db,
    sql`select h.id,
          (select m.id from memories m where ${same} and m.id < h.id order by m.id desc limit 1) as prev,
          (select m.id from memories m where ${same} and m.id > h.id order by m.id limit 1) as next
        from memories h where h.user_id = ${userId} and h.id in (${sql.join(
          ids.map((i) => sql`${i}`),
          sql`, `,
        )})`,
  );
  return new Map(rows.map((r) => [r.id, { prev: r.prev, next: r.next }]));
}
