/**
 * What the ranking of memory search (ranking.ts) reads of a memory, and the one
 * derivation of it from a stored memory ({@link rowFacts}), in a file that imports only time.ts (a
 * leaf), so the in-process text index (text-index.ts), which keeps these facts for every memory of a
 * searching user, uses them without an import loop through `context.ts`.
 */
import { mentionsTime } from './time.js';

/** The speaker of a memory (`metadata.speaker`, trimmed), or null when it is not a conversation turn. */
export function speakerOf(metadata: Record<string, unknown> | null | undefined): string | null {
  const s = metadata?.speaker;
  return typeof s === 'string' && s.trim() ? s.trim() : null;
}

/** A speaker's name at the start of a content: a capitalised name of up to 40 characters, then ": ". */
const SPOKEN = /^(\p{Lu}[\p{L}\p{N} .'’-]{0,39}): \S/u;

/**
 * The speaker of a conversation turn: `metadata.speaker` ({@link speakerOf}), else the name its
 * content starts with (`"Caroline: I went to…"`, what a chat client stores without metadata); null
 * when the memory is not a turn.
 */
export function turnSpeaker(content: string, metadata: Record<string, unknown> | null | undefined): string | null {
  return speakerOf(metadata) ?? SPOKEN.exec(content)?.[1] ?? null;
}

/**
 * A candidate as the re-ranking weighs it: from its row ({@link rowFacts}) or from the in-process
 * text index (`TextIndex.facts`), which keeps them for every memory, so ranking reads no row.
 */
export interface TurnFacts {
  sessionId: string | null;
  /** {@link turnSpeaker}: null when it is not a conversation turn (then it has no neighbours in ranking). */
  speaker: string | null;
  /** When it happened: `occurred_at`, else `created_at`, in milliseconds since the Unix epoch. */
  at: number;
  /** Whether its content mentions a time (time.ts `mentionsTime`); asked only for a "when" question. */
  mentionsTime(): boolean;
  /** Whether its content is mainly a question ({@link asksMainly}): a turn whose answer is the next one. */
  asks: boolean;
}

/** A sentence that ends a question: "?", then only closing quotes, brackets, emoji or spaces. */
const QUESTION_END = /\?(?:[\s"'’”)\]]|\p{Extended_Pictographic}|\uFE0F)*$/u;

/** Most words a question turn may say besides its questions ({@link asksMainly}): about one short sentence. */
export const QUESTION_TURN_MAX_OTHER_WORDS = 20;

/**
 * Whether a turn's `content` is mainly a question: it ends with one, and its sentences that are not
 * questions hold at most {@link QUESTION_TURN_MAX_OTHER_WORDS} words ("That sounds awesome! What did
 * you take away from it?"), not counting a leading `"Name: "`. Such a turn shares the words of a
 * question about its topic, but the answer is the reply after it (ranking.ts scales its own
 * relevance down; as a neighbour it still lifts that reply). A turn that tells something and then
 * asks back ("I went to the support group yesterday, it was powerful. … What about you?") is not.
 * On LoCoMo the 20-word bound was the best of 4/8/14/20/30/unbounded (bench/memory-locomo.ts,
 * docs/adr/0974-memory-question-turns.md).
 */
export function asksMainly(content: string): boolean {
  if (!QUESTION_END.test(content)) return false;
  let other = 0;
  const name = SPOKEN.exec(content)?.[1];
  const body = name === undefined ? content : content.slice(name.length + 2);
  for (const sentence of body.split(/(?<=[.!?])\s+/)) {
    if (QUESTION_END.test(sentence)) continue;
    other += sentence.split(/\s+/).filter(Boolean).length;
    if (other > QUESTION_TURN_MAX_OTHER_WORDS) return false;
  }
  return true;
}

/** The parts of a stored memory its {@link TurnFacts} come from. */
export interface TurnSource {
  sessionId: string | null;
  metadata: Record<string, unknown>;
  content: string;
  createdAt: Date;
  occurredAt?: Date | null;
}

/** {@link TurnFacts} of a stored memory (`mentionsTime` evaluated when asked). */
export function rowFacts(row: TurnSource): TurnFacts {
  return {
    sessionId: row.sessionId,
    speaker: turnSpeaker(row.content, row.metadata),
    at: (row.occurredAt ?? row.createdAt).getTime(),
    mentionsTime: () => mentionsTime(row.content),
    asks: asksMainly(row.content),
  };
}
