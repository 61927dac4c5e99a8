/**
 * What a note is embedded from, and the memories around a search hit.
 *
 * A note is embedded with the note before it in its stream — the same session, or the user's notes
 * without one — as `"<previous> <note>"` ({@link embeddingText}): in a conversation stored turn by
 * turn, "Just under. My legs are dead but I feel fantastic." says nothing about a race; with the
 * question before it, it does. On real conversations (LoCoMo, bench/memory-locomo.ts) this lifted
 * hit@5 of the ranking from 0.715 to 0.739 (docs/adr/0941-memory-ranking-on-real-conversations.md).
 * Full text still indexes the note's own words only; executions and summaries are embedded alone.
 * A note with `metadata.speaker` is embedded as `"<previous> <speaker>: <note>"`.
 */
import { sql, type SQL } from 'drizzle-orm';
import { execRows, type Db, type Tx } from '../../db/client.js';
import { CANDIDATE_COLUMNS, candidateRow, type CandidateRow } from './store.js';
import { speakerOf } from './turn-facts.js';

/** Longest previous note kept in an embedding input, characters (a sentence encoder reads sentences). */
const MAX_PREVIOUS_CHARS = 600;

/**
 * The text a memory is embedded from: `"<previous> <content>"` (previous = the note before it in
 * its stream, cut to 600 characters; omitted when there is none), with `"<speaker>: "` before the
 * content when `metadata.speaker` names one.
 */
export function embeddingText(content: string, metadata: Record<string, unknown> | null | undefined, previous: string | null): string {
  const speaker = speakerOf(metadata);
  const own = speaker ? `${speaker}: ${content}` : content;
  return previous ? `${previous.slice(0, MAX_PREVIOUS_CHARS)} ${own}` : own;
}

/**
 * Content of the newest memory of `userId` in the stream a new note joins (`sessionId`, or the
 * memories without a session) when it is a note, else null: one index probe
 * (`memories_user_session_idx`).
 */
export async function previousNoteOf(db: Db | Tx, userId: string, sessionId: string | null): Promise<string | null> {
  const [row] = await execRows<{ content: string; kind: string }>(
    db,
    sql`select content, kind from memories where user_id = ${userId} and ${sessionId === null ? sql`session_id is null` : sql`session_id = ${sessionId}`}
        order by id desc limit 1`,
  );
  return row?.kind === 'note' ? row.content : null;
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
