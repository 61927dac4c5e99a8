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
import { asksWhen, mentionsTime, timeRange, type TimeRange } from './time.js';
import { CANDIDATE_COLUMNS, candidateRow, type CandidateRow } from './store.js';

/** Longest previous turn kept in an embedding input, characters (a sentence encoder reads sentences). */
const MAX_PREVIOUS_CHARS = 600;

/** The speaker of a memory (`metadata.speaker`, trimmed), or null when it is not a conversation turn. */
export function speakerOf(metadata: Record<string, unknown> | null | undefined): string | null {
  const s = metadata?.speaker;
  return typeof s === 'string' && s.trim() ? s.trim() : null;
}

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

/** A fused candidate as {@link rerankTurns} needs it. */
export interface RankedTurn {
  id: string;
  score: number;
  row: { sessionId: string | null; metadata: Record<string, unknown>; content: string; createdAt: Date; occurredAt?: Date | null };
}

/**
 * The time factor of a candidate: 1 + `timeBoost` when the query asks "when …" and the memory
 * mentions a time, and again when the memory happened (`occurred_at`, else `created_at`) inside
 * the period the query names (time.ts); else 1.
 */
function timeFactor(c: RankedTurn, when: boolean, range: TimeRange | null, boost: number): number {
  let f = 1;
  if (when && mentionsTime(c.row.content)) f *= 1 + boost;
  if (range) {
    const t = (c.row.occurredAt ?? c.row.createdAt).getTime();
    if (t >= range.from.getTime() && t < range.to.getTime()) f *= 1 + boost;
  }
  return f;
}

/**
 * Re-score hybrid candidates that are conversation turns (see the module comment): speaker boost,
 * then `score += neighbourWeight × max(score of the previous, next turn)` with the neighbours'
 * boosted scores (0 for a neighbour that is not a candidate); sorted best first, ties by id
 * descending as in the fusion. Neighbours are the adjacent memories of the same session by id
 * (time) order, read with one query over the candidates' sessions (`memories_user_session_idx`).
 * Candidates that are not turns keep their score. Pure re-ordering: no candidate is added or removed.
 */
export async function rerankTurns<T extends RankedTurn>(
  ctx: AppContext,
  db: Db | Tx,
  userId: string,
  query: string,
  candidates: T[],
  now = new Date(),
  /** Neighbours from the in-process index (text-index.ts `neighbours`); null → the window query. */
  neighbours?: (ids: string[]) => Map<string, { prev: string | null; next: string | null }> | null,
): Promise<T[]> {
  const { speakerBoost, neighbourWeight, timeBoost } = ctx.config.memory.fusion;
  const turns = candidates.filter((c) => speakerOf(c.row.metadata));
  const when = timeBoost > 0 && asksWhen(query);
  const range = timeBoost > 0 ? timeRange(query, now) : null;
  if ((turns.length === 0 || (speakerBoost === 0 && neighbourWeight === 0)) && !when && !range) return candidates;
  const words = new Set(tokenize(query));
  const boosted = new Map<string, number>();
  for (const c of candidates) {
    const speaker = speakerOf(c.row.metadata);
    const named = speaker !== null && tokenize(speaker).every((w) => words.has(w));
    boosted.set(c.id, (named ? c.score * (1 + speakerBoost) : c.score) * timeFactor(c, when, range, timeBoost));
  }
  const final = new Map(boosted);
  const sessions = [...new Set(turns.map((c) => c.row.sessionId).filter((s): s is string => s !== null))];
  if (neighbourWeight > 0 && sessions.length > 0) {
    const ids = turns.map((c) => c.id);
    const known = neighbours?.(ids);
    const rows = known ? [...known].map(([id, n]) => ({ id, ...n })) : await execRows<{ id: string; prev: string | null; next: string | null }>(
      db,
      sql`select id, prev, next from (
            select id, lag(id) over w as prev, lead(id) over w as next from memories
            where user_id = ${userId} and session_id in (${sql.join(sessions.map((s) => sql`${s}`), sql`, `)})
            window w as (partition by session_id order by id)
          ) x where id in (${sql.join(ids.map((i) => sql`${i}`), sql`, `)})`,
    );
    for (const r of rows) {
      const near = Math.max(r.prev ? boosted.get(r.prev) ?? 0 : 0, r.next ? boosted.get(r.next) ?? 0 : 0);
      final.set(r.id, boosted.get(r.id)! + neighbourWeight * near);
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
