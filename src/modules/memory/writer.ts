/**
 * The in-process batching writer behind `rememberExecution`, on the platform's one write-behind
 * batcher ({@link WriteBatcher}, src/lib/batcher.ts): the request path only queues a reference
 * (O(1), well under 0.2 ms); a batch — taken after at most `flushDelayMs` (50 ms), or at once when
 * it is full — builds the sentences and inserts them in one multi-row INSERT, WITHOUT a vector:
 * full-text search finds them at once, and the background back-fill
 * (`EmbeddingBackfill`, backfill.ts) embeds them when the process has time, so the embedding model
 * never competes with requests at full load and the queue never has to drop memories for want of
 * embedding capacity. Readers of this instance drain the queue first (`flushMemoryWrites`), so a
 * caller always finds the memories of its finished executions. Flushed on shutdown through
 * `ctx.onClose`. Failures are logged, never thrown.
 */
import type { AppContext } from '../../context.js';
import { WriteBatcher } from '../../lib/batcher.js';
import { storable } from '../../lib/nul.js';
import type { MemoryWriterPort, NewMemoryRow, PendingMemory } from './state.js';
import { insertMemoryRows } from './store.js';

/**
 * Rows per INSERT on PGlite, which runs each statement on this thread: small statements with a turn
 * of the event loop between them keep requests from waiting behind a whole batch (the rows carry no
 * vector, so no HNSW insertion; the GIN full-text index and the term statistics remain).
 */
const PGLITE_ROWS_PER_STATEMENT = 16;

/**
 * Most memories waiting in memory before new ones are dropped (with an error logged). Inserts carry no
 * embedding, so the queue only grows this long when the database itself cannot keep up.
 */
const MAX_PENDING = 10_000;

export type { PendingMemory } from './state.js';

export class MemoryWriter implements MemoryWriterPort {
  private readonly batcher: WriteBatcher<PendingMemory>;
  private dropped = 0;

  constructor(
    private readonly ctx: AppContext,
    private readonly ready: Promise<void>,
    /** Called after rows were inserted (without vectors): the back-fill's `kick`. */
    private readonly stored: () => void,
    batchSize = 256,
    /** Longest a queued memory waits for companions before its batch is written, ms. */
    flushDelayMs = 50,
  ) {
    // per-batch costs (parse/plan/commit, the term-statistics trigger) are paid once per batch;
    // writeBatch never rejects, so the batcher's one-at-a-time retry never runs
    this.batcher = new WriteBatcher({
      write: (items) => this.writeBatch(items),
      maxBatch: batchSize,
      delayMs: flushDelayMs,
      gather: false,
    });
  }

  /** Memories queued, not yet handed to an INSERT. */
  get pending(): number {
    return this.batcher.pending;
  }

  /** Queue one memory. O(1); never throws. */
  enqueue(item: PendingMemory): void {
    if (this.batcher.pending >= MAX_PENDING) {
      if (this.dropped++ % 1000 === 0)
        this.ctx.log.error(
          { pending: this.batcher.pending, dropped: this.dropped },
          'memory writer queue full: dropping execution memories',
        );
      return;
    }
    this.batcher.add(item).catch(() => undefined);
  }

  /** Resolve when everything queued so far is written (or has failed and been logged). */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  private async writeBatch(batch: PendingMemory[]): Promise<void> {
    try {
      await this.ready;
    } catch {
      return; // start-up failed; the app does not start either
    }
    const rows: NewMemoryRow[] = [];
    for (const item of batch) {
      try {
        // Upstream answers may hold U+0000, which PostgreSQL text cannot store.
        const row = item.build();
        rows.push({ ...row, content: storable(row.content), metadata: storable(row.metadata) });
      } catch (err) {
        this.ctx.log.error({ err: (err as Error).message }, 'could not build an execution memory');
      }
    }
    if (rows.length === 0) return;
    const step = this.ctx.database.engine === 'pglite' ? PGLITE_ROWS_PER_STATEMENT : rows.length;
    for (let at = 0; at < rows.length; at += step) {
      if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      await this.insert(rows.slice(at, at + step));
    }
    this.stored();
  }

  private async insert(rows: NewMemoryRow[]): Promise<void> {
    const none = rows.map(() => null);
    try {
      await insertMemoryRows(this.ctx, this.ctx.database.hotDb, rows, none);
    } catch {
      // one bad row (e.g. its user was deleted meanwhile) must not cost the others: retry one by one
      for (const row of rows) {
        try {
          await insertMemoryRows(this.ctx, this.ctx.database.hotDb, [row], [null]);
        } catch (err) {
          this.ctx.log.error(
            { err: (err as Error).message, execution_id: row.executionId },
            'could not store an execution memory',
          );
        }
      }
    }
  }
}
