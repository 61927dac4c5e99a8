/**
 * The per-user, least-recently-used entries behind the in-process arms of memory search on PGlite
 * (vector-cache.ts, text-index.ts): an entry is loaded on a user's first search (concurrent callers
 * share the load), a write that lands while it loads marks it `stale` (it is then not kept), and
 * entries are evicted, least recently searched first, while the total {@link UserEntries.used} (bytes,
 * postings — the subclass's measure, kept up to date by its writes) exceeds `max`; the last entry is
 * always kept.
 */
import type { Db, Tx } from '../../db/client.js';

/** What every entry carries. */
export interface UserEntry {
  /** Set when a write landed while the entry was loading: it is not kept. */
  stale: boolean;
  loading: Promise<unknown> | null;
}

export abstract class UserEntries<E extends UserEntry> {
  protected readonly users = new Map<string, E>();
  /** Size of every entry held, in the subclass's unit. */
  protected used = 0;

  constructor(protected readonly max: number) {}

  /** A new, empty entry (filled by {@link load}). */
  protected abstract empty(): E;
  /** Fill `e` with `userId`'s memories. */
  protected abstract load(db: Db | Tx, userId: string, e: E): Promise<E>;
  /** The size of `e`, in the unit of {@link used}. */
  protected abstract sizeOf(e: E): number;

  /** Drop `userId`'s entry, or every entry. */
  forget(userId?: string): void {
    for (const [u, e] of this.users) {
      if (userId !== undefined && u !== userId) continue;
      if (e.loading) e.stale = true;
      else this.drop(u, e);
    }
  }

  /**
   * `userId`'s entry for a write to follow (rows added or removed): the loaded entry, or undefined
   * when none is held or it is still loading — then it is marked `stale` (not kept once loaded).
   */
  protected forWrite(userId: string): E | undefined {
    const e = this.users.get(userId);
    if (e?.loading) {
      e.stale = true;
      return undefined;
    }
    return e;
  }

  protected drop(userId: string, e: E): void {
    this.used -= this.sizeOf(e);
    this.users.delete(userId);
  }

  /** `userId`'s entry, loaded on first use, marked most recently used. */
  protected async entry(db: Db | Tx, userId: string): Promise<E> {
    const have = this.users.get(userId);
    if (have) {
      this.users.delete(userId); // most recently used last
      this.users.set(userId, have);
      return (have.loading as Promise<E> | null) ?? have;
    }
    const e = this.empty();
    e.loading = this.load(db, userId, e);
    this.users.set(userId, e);
    try {
      return await (e.loading as Promise<E>);
    } finally {
      e.loading = null;
      if (e.stale) this.users.delete(userId);
      else {
        this.used += this.sizeOf(e);
        this.evict();
      }
    }
  }

  protected evict(): void {
    for (const [u, e] of this.users) {
      if (this.used <= this.max || this.users.size <= 1) return;
      if (!e.loading) this.drop(u, e);
    }
  }
}
