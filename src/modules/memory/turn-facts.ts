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
  };
}
