/**
 * Memory kinds: what a memory is, beside who wrote it (`source`). `note` — a user's or agent's own
 * memory (`POST /memory`'s default); `execution` — written by the tool-execution hook, one per call;
 * `summary` — a session summary (or a note its author marks as one). Search and list return notes
 * and summaries unless `?kind=` asks for executions (docs/adr/0942-memory-kinds.md): every tool call
 * writes a memory, and they would otherwise outnumber and outrank the user's own.
 *
 * A leaf file (no imports), so the state types, the in-process indexes and the services share it
 * without an import loop.
 */

/** What a memory is. */
export type MemoryKind = 'note' | 'execution' | 'summary';

/** Every kind, in the order of their codes ({@link kindCode}). */
export const MEMORY_KINDS: readonly MemoryKind[] = ['note', 'execution', 'summary'];

/** The kinds a search or list returns when `kind` is not given. */
export const DEFAULT_KINDS: readonly MemoryKind[] = ['note', 'summary'];

/** The `?kind=` syntax: `all`, or one or more kinds separated by commas (e.g. `note,execution`). */
export const KIND_FILTER_PATTERN = '^(all|(note|execution|summary)(,(note|execution|summary))*)$';

/** A small integer per kind (0 note, 1 execution, 2 summary), as the in-process indexes keep it. */
export function kindCode(kind: string): number {
  const i = MEMORY_KINDS.indexOf(kind as MemoryKind);
  return Math.max(i, 0);
}

/**
 * The kinds a `?kind=` value selects ({@link KIND_FILTER_PATTERN}; validated by the route schema):
 * undefined → {@link DEFAULT_KINDS}; `all` → every kind.
 */
export function selectedKinds(filter: string | undefined): MemoryKind[] {
  if (filter === undefined) return [...DEFAULT_KINDS];
  if (filter === 'all') return [...MEMORY_KINDS];
  return [...new Set(filter.split(',').filter((k): k is MemoryKind => MEMORY_KINDS.includes(k as MemoryKind)))];
}

/** A bit mask of `kinds` over {@link kindCode}s (bit c set: kind c admitted). */
export function kindMask(kinds: readonly MemoryKind[]): number {
  return kinds.reduce((m, k) => m | (1 << kindCode(k)), 0);
}
