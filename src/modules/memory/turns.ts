/**
 * What a conversation turn is embedded from, and the memories around a search hit.
 *
 * A note is a *turn* when `metadata.speaker` names its speaker or its content starts with one
 * (`"Caroline: I went to…"`, what a chat client stores without metadata). A turn that follows a turn
 * in its stream — the same session, or the memories without one — is embedded with it, as
 * `"<previous> <turn>"` ({@link embeddingText}): "Just under. My legs are dead but I feel
 * fantastic." says nothing about a race; with the question before it, it does. On real
 * conversations (LoCoMo, bench/memory-locomo.ts) this lifted hit@5 from 0.715 to 0.739
 * (docs/adr/0941-memory-ranking-on-real-conversations.md). Other notes, executions and summaries
 * are embedded alone (an unrelated note before a note would only blur it); full text indexes every
 * memory's own words only.
 */
import { sql, type SQL } from 'drizzle-orm';
import { execRows, type Db, type Tx } from '../../db/client.js';
import { CANDIDATE_COLUMNS, candidateRow, type CandidateRow } from './store.js';
import { speakerOf, turnSpeaker } from './turn-facts.js';

/** Longest previous turn kept in an embedding input, characters (a sentence encoder reads sentences). */
const MAX_PREVIOUS_CHARS = 600;

/** Is a memory with this content and metadata a conversation turn (see the module comment)? */
export function isTurn(content: string, metadata: Record<string, unknown> | null | undefined): boolean {
  return turnSpeaker(content, metadata) !== null;
}

/**
 * The text a memory is embedded from: `"<previous> <content>"` (previous = the turn before it in
 * its stream when both are turns, cut to 600 characters; else omitted), with `"<speaker>: "`
 * before the content when `metadata.speaker` names one.
 */
export function embeddingText(
  content: string,
  metadata: Record<string, unknown> | null | undefined,
  previous: string | null,
): string {
  const speaker = speakerOf(metadata);
  const own = speaker ? `${speaker}: ${content}` : content;
  return previous && isTurn(content, metadata) ? `${previous.slice(0, MAX_PREVIOUS_CHARS)} ${own}` : own;
}

/**
 * The previous turn of a new note: the newest memory of `userId` in its stream (`sessionId`, or
 * the memories without a session) when it is a note and a turn ({@link isTurn}), its text as
 * {@link embeddingText} embeds it; else null. One index probe (`memories_user_session_idx`).
 */
export async function previousNoteOf(db: Db | Tx, userId: string, sessionId: string | null): Promise<string | null> {
  const [row] = await execRows<{ content: string; kind: string; metadata: Record<string, unknown> | string | null }>(
    db,
    sql`select content, kind, metadata from memories where user_id = ${userId} and ${sessionId === null ? sql`session_id is null` : sql`session_id = ${sessionId}`}
        order by id desc limit 1`,
  );
  return row ? previousText(row.kind, row.content, row.metadata) : null;
}

/** A stored memory as the previous turn of the next one: its text when it is a note and a turn, else null. */
export function previousText(
  kind: string,
  content: string,
  metadata: Record<string, unknown> | string | null,
): string | null {
  const meta = typeof metadata === 'string' ? (JSON.parse(metadata) as Record<string, unknown>) : metadata;
  if (kind !== 'note' || !isTurn(content, meta)) return null;
  const speaker = speakerOf(meta);
  return speaker ? `${speaker}: ${content}` : content;
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
export async function sessionNeighbours(
  db: Db | Tx,
  where: SQL,
  ids: string[],
): Promise<Map<string, SessionNeighbours>> {
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
        where h.id in (${sql.join(
          ids.map((id) => sql`${id}`),
          sql`, `,
        )}) and h.session_id is not null`,
  );
  for (const r of rows) {
    const row = candidateRow({ ...r, score: 0, distance: null, vector_rank: null, text_rank: null }).row;
    const n = out.get(r.hit)!;
    if (r.side === 'previous') n.previous = row;
    else n.next = row;
  }
  return out;
}
