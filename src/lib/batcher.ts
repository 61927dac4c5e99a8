/**
 * The one write-behind batcher of the platform: a group commit for high-volume
 * writes (the execution log and the memory writer; the analytics recorders are to move onto it).
 *
 * Items handed to {@link WriteBatcher.add} while a write is in flight are written together by the
 * next one: at most one `write` runs at a time, each carrying up to `maxBatch` items in arrival
 * order. Every caller's promise settles when its own item is committed (or definitively failed),
 * so a caller that awaits `add` never acknowledges something that is not stored; a caller that
 * does not await it (fire-and-forget) gets write-behind and must attach its own `.catch`.
 *
 * Failure isolation: when a batch fails, its items are retried one at a time, so one bad item
 * (e.g. a row whose parent was deleted meanwhile) fails only its own caller.
 */

/** How a {@link WriteBatcher} writes and how large its batches get. */
export interface WriteBatcherOptions<T, R = void> {
  /**
   * Writes `items` (1..maxBatch, arrival order) all-or-nothing; rejects when none was written.
   * Resolves with one result per item, in the items' order, when the writer has results (`R`,
   * e.g. the rows a `RETURNING` gave back), or with nothing when `R` is `void`.
   */
  write: (items: T[]) => Promise<R[] | void>;
  /** Most items one `write` carries (default 256). */
  maxBatch?: number;
  /**
   * Yield one event-loop turn (`setImmediate`) before taking a batch, so the requests whose I/O is
   * ready can add their items first (default true). Needed on an engine that runs statements
   * synchronously on this thread (PGlite): without the turn no batch would hold more than one item.
   * A function is asked before each batch (the engine may be known only once the database is open).
   */
  gather?: boolean | (() => boolean);
  /**
   * Longest the first item of a batch waits for companions before the batch is taken, ms (default 0:
   * only the `gather` turn). A batch that fills up (`maxBatch`) is taken at once, and so is every
   * batch while {@link WriteBatcher.drain} runs. For writers whose per-write cost (an embedding call,
   * a statement) is worth waiting a little to share; the timer does not keep the process alive.
   */
  delayMs?: number;
  /**
   * Upkeep of what the writer writes (e.g. deleting rows past their retention): `run` follows a
   * successful write when at least `everyMs` have passed since its last start (the first write
   * runs it), inside the batcher's turn, so it never overlaps a write, and after the write's callers
   * are answered. A failed `run` goes to `onError` and never fails a caller (the next one retries).
   */
  upkeep?: { everyMs: number; run: () => Promise<unknown>; onError: (err: unknown) => void };
}

interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

/**
 * A group-commit queue of items of type `T` (one per purpose and per app, held on `AppContext`);
 * `R` is what each item's write gives back to its caller (void for plain inserts).
 */
export class WriteBatcher<T, R = void> {
  private waiting: Array<Waiting<T, R>> = [];
  private running: Promise<void> | null = null;
  private readonly maxBatch: number;
  private readonly gather: boolean | (() => boolean);
  private readonly delayMs: number;
  /** Ends the current `delayMs` wait early (set while one runs). */
  private wake: (() => void) | null = null;
  /** Drains in progress: no `delayMs` wait while > 0. */
  private draining = 0;
  /** When `upkeep` last started, ms since the epoch (0: never). */
  private lastUpkeep = 0;

  constructor(private readonly opts: WriteBatcherOptions<T, R>) {
    this.maxBatch = Math.max(1, opts.maxBatch ?? 256);
    this.gather = opts.gather ?? true;
    this.delayMs = Math.max(0, opts.delayMs ?? 0);
  }

  /** Items queued, not yet handed to `write`. */
  get pending(): number {
    return this.waiting.length;
  }

  /**
   * Queue `item`. Resolves once a `write` that carried it succeeded, with that item's result (`R`);
   * rejects with that item's own write error.
   */
  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (!this.running) this.running = this.run();
      else if (this.waiting.length >= this.maxBatch) this.wake?.();
    });
  }

  /** Resolves when nothing is queued or in flight (shutdown, tests); a `delayMs` wait ends at once. */
  async drain(): Promise<void> {
    this.draining++;
    try {
      while (this.running) {
        this.wake?.();
        await this.running;
      }
    } finally {
      this.draining--;
    }
  }

  /** Wait up to `delayMs` for companions; {@link wake} ends the wait early. */
  private pause(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.wake?.(), this.delayMs);
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        if (this.delayMs > 0 && this.draining === 0 && this.waiting.length < this.maxBatch) await this.pause();
        if (typeof this.gather === 'function' ? this.gather() : this.gather)
          await new Promise<void>((resolve) => setImmediate(resolve));
        await this.commit(this.waiting.splice(0, this.maxBatch));
      }
    } finally {
      this.running = null;
    }
  }

  private async upkeep(): Promise<void> {
    const u = this.opts.upkeep;
    if (!u || Date.now() - this.lastUpkeep < u.everyMs) return;
    this.lastUpkeep = Date.now();
    await u.run().catch(u.onError);
  }

  private async commit(batch: Array<Waiting<T, R>>): Promise<void> {
    try {
      const results = await this.opts.write(batch.map((w) => w.item));
      for (let i = 0; i < batch.length; i++) batch[i].resolve((results ? results[i] : undefined) as R);
      await this.upkeep();
    } catch (err) {
      if (batch.length === 1) {
        batch[0].reject(err);
        return;
      }
      for (const w of batch) await this.commit([w]);
    }
  }
}
