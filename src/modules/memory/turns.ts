/**
 * Conversation turns in memory search (issue 21). A memory is a *turn* when its `metadata.speaker`
 * is a non-blank string (a chat client storing each message with its author); turns of one
 * conversation share a `session_id`. Three things use that structure (docs/decisions.md
 * memory/conversations; measured in bench/memory-conversations.ts):
 *
 * 1. Embedding input ({@link embeddingText}): a turn is embedded as `"<speaker>: <previous turn>
 *    <turn>"` — alone, "Just under. My legs are dead but I feel fantastic." says nothing about a
 *    race; with the question before it, it does. Full text still indexes the turn's own words only.
 * 2. Speaker match ({@link rerankTurns}): a turn whose speaker the query names ("What did Maya…")
 *    has its fused score × (1 + `MEMORY_SPEAKER_BOOST`).
 * 3. Neighbouring turns ({@link rerankTurns}): each turn adds `MEMORY_NEIGHBOUR_WEIGHT` × the larger
 *    fused score of the turn before and after it in its session (the answer is often the reply to
 *    the turn that matches the question's words).
 *
 * {@link rerankTurns} also applies the time factor to every candidate, turn or not (time.ts,
 * `MEMORY_TIME_BOOST`): "when …" questions favour memories that mention a time, and a period named
 * in the query favours memories whose `occurred_at` lies in it.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { execRows, type Db, type Tx } from '../../db/client.js';
import { tokenize } from './embeddings.js';
import { asksWhen, timeRange, type TimeRange } from './time.js';
import { CANDIDATE_COLUMNS, candidateRow, type CandidateRow } from './store.js';
import { speakerOf, type TurnFacts } from './turn-facts.js';

/** Longest previous turn kept in an embedding input, characters (a sentence encoder reads sentences). */
const MAX_PREVIOUS_CHARS = 600;

/**
 * The text a memory is embedded from: `"<speaker>: <previous> <content>"` for a turn (previous = the
 * content of the session's memory before it, cut to 600 characters; omitted when there is none),
 * else `content` unchanged.
 */
export function embeddingText(content: string, metadata: Record<string, unknown> | null | undefined, previous: string | null): string {
  const speaker = speakerOf(metadata);
  if (!speaker) return content;
  const prev = previous ? previous.slice(0, MAX_PREVIOUS_CHARS) : '';
  return prev ? `${speaker}: ${prev} ${content}` : `${speaker}: ${content}`;
}

/** Content of the newest memory of `userId` in `sessionId` (the turn a new turn follows), or null. */
export async function lastTurnOf(db: Db | Tx, userId: string, sessionId: string): Promise<string | null> {
  const [row] = await execRows<{ content: string }>(
    db,
    sql`select content from memories where user_id = ${userId} and session_id = ${sessionId} order by id desc limit 1`,
  );
  return row?.content ?? null;
}

/**
 * The time factor of a candidate: 1 + `timeBoost` when the query asks "when …" and the memory
 * mentions a time, and again when the memory happened (`occurred_at`, else `created_at`) inside
 * the period the query names (time.ts); else 1.
 */
function timeFactor(f: TurnFacts, when: boolean, range: TimeRange | null, boost: number): number {
  let x = 1;
  if (when && f.mentionsTime()) x *= 1 + boost;
  if (range && f.at >= range.from.getTime() && f.at < range.to.getTime()) x *= 1 + boost;
  return x;
}

/**
 * Re-score hybrid candidates that are conversation turns (see the module comment): speaker boost,
 * then `score += neighbourWeight × max(score of the previous, next turn)` with the neighbours'
 * boosted scores (0 for a neighbour that is not a candidate); sorted best first, ties by id
 * descending as in the fusion. `facts` tells each candidate's session, speaker and time
 * (turn-facts.ts `rowFacts` for a candidate with its row). Neighbours are the adjacent memories of the same
 * session by id (time) order: from `neighbours` (the in-process index) when it answers, else read
 * with one query over the candidates' sessions (`memories_user_session_idx`). Candidates that are
 * not turns keep their score. Pure re-ordering: no candidate is added or removed.
 */
export async function rerankTurns<T extends { id: string; score: number }>(
  ctx: AppContext,
  db: Db | Tx,
  userId: string,
  query: string,
  candidates: T[],
  facts: (c: T) => TurnFacts,
  now = new Date(),
  /** Neighbours from the in-process index (text-index.ts `neighbours`); null → the window query. */
  neighbours?: (ids: string[]) => Map<string, { prev: string | null; next: string | null }> | null,
): Promise<T[]> {
  const { speakerBoost, neighbourWeight, timeBoost } = ctx.config.memory.fusion;
  const known = candidates.map(facts);
  const turns = candidates.filter((_, i) => known[i].speaker !== null);
  const when = timeBoost > 0 && asksWhen(query);
  const range = timeBoost > 0 ? timeRange(query, now) : null;
  if ((turns.length === 0 || (speakerBoost === 0 && neighbourWeight === 0)) && !when && !range) return candidates;
  const words = new Set(tokenize(query));
  const boosted = new Map<string, number>();
  const sessionOf = new Map<string, string>();
  candidates.forEach((c, i) => {
    const f = known[i];
    const named = f.speaker !== null && tokenize(f.speaker).every((w) => words.has(w));
    boosted.set(c.id, (named ? c.score * (1 + speakerBoost) : c.score) * timeFactor(f, when, range, timeBoost));
    if (f.speaker !== null && f.sessionId !== null) sessionOf.set(c.id, f.sessionId);
  });
  const final = new Map(boosted);
  const sessions = [...new Set(sessionOf.values())];
  if (neighbourWeight > 0 && sessions.length > 0) {
    const ids = turns.map((c) => c.id);
    const near = neighbours?.(ids);
    const rows = near ? [...near].map(([id, n]) => ({ id, ...n })) : await execRows<{ id: string; prev: string | null; next: string | null }>(
      db,
      sql`select id, prev, next from (
            select id, lag(id) over w as prev, lead(id) over w as next from memories
            where user_id = ${userId} and session_id in (${sql.join(sessions.map((s) => sql`${s}`), sql`, `)})
            window w as (partition by session_id order by id)
          ) x where id in (${sql.join(ids.map((i) => sql`${i}`), sql`, `)})`,
    );
    for (const r of rows) {
      const nb = Math.max(r.prev ? boosted.get(r.prev) ?? 0 : 0, r.next ? boosted.get(r.next) ?? 0 : 0);
      final.set(r.id, boosted.get(r.id)! + neighbourWeight * nb);
    }
  }
  return candidates
    .map((c) => ({ ...c, score: final.get(c.id)! }))
    .sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/** The memories just before and after one memory in its session (`GET /memory/search?expand=neighbors`). */
export interface SessionNeighbours {
  previous: CandidateRow['row'] | null;
  next: CandidateRow['row'] | null;
}

/**
 * For each of `ids`, the memory before and the memory after it in its session (id = time order),
 * among the memories `where` admits (the search's scope and filters over unqualified `memories`
 * columns, so an agent sees only its own); memories without a session have none. One statement:
 * two index probes per id (`memories_user_session_idx`).
 */
export async function sessionNeighbours(db: Db | Tx, where: SQL, ids: string[]): Promise<Map<string, SessionNeighbours>> {
  const out = new Map<string, SessionNeighbours>(ids.map((id) => [id, { previous: null, next: null }]));
  if (ids.length === 0) return out;
  const side = (name: string, cmp: SQL, order: SQL) =>
    sql`(select ${name}::text as side, m.id, ${CANDIDATE_COLUMNS} from memories m
         where m.user_id = h.user_id and m.session_id = h.session_id and ${cmp} and ${where}
         order by ${order} limit 1)`;
  const rows = await execRows<Record<string, unknown> & { hit: string; side: string }>(
    db,
    sql`select h.id as hit, n.* from memories h
        cross join lateral (${side('previous', sql`m.id < h.id`, sql`m.id desc`)} union all ${side('next', sql`m.id > h.id`, sql`m.id`)}) n
        where h.id in (${sql.join(ids.map((id) => sql`${id}`), sql`, `)}) and h.session_id is not null`,
  );
  for (const r of rows) {
    const row = candidateRow({ ...r, score: 0, distance: null, vector_rank: null, text_rank: null }).row;
    const n = out.get(r.hit)!;
    if (r.side === 'previous') n.previous = row;
    else n.next = row;
  }
  return out;
}
