/**
 * The in-process batching writer behind `rememberExecution`, on the platform's one write-behind
 * batcher ({@link WriteBatcher}, src/lib/batcher.ts): the request path only queues a reference
 * (O(1), well under 0.2 ms); a batch — taken after at most `flushDelayMs` (50 ms), or at once when
 * it is full — builds the sentences, embeds them in one provider call and inserts them in one
 * multi-row INSERT. Readers of this instance drain the queue first (`flushMemoryWrites`), so a
 * caller always finds the memories of its finished executions. Flushed on shutdown through
 * `ctx.onClose`. Failures are logged, never thrown: when the embedding provider fails, the memories
 * are stored without a vector (full-text search still finds them) and back-filled after the next
 * successful batch.
 */
import type { AppContext } from '../../context.js';
import { WriteBatcher } from '../../lib/batcher.js';
import { storable } from '../../lib/nul.js';
import type { EmbeddingProvider } from './embeddings.js';
import type { MemoryWriterPort, NewMemoryRow, PendingMemory } from './state.js';
import { insertMemoryRows } from './store.js';

/** Rows per INSERT on PGlite (see `writeBatch`). */
const PGLITE_ROWS_PER_STATEMENT = 4;

/** Most memories waiting in memory before new ones are dropped (with a warning). */
const MAX_PENDING = 10_000;

export type { PendingMemory } from './state.js';

export class MemoryWriter implements MemoryWriterPort {
  private readonly batcher: WriteBatcher<PendingMemory>;
  private dropped = 0;
  /** Set when rows were stored without an embedding; cleared by a back-fill. */
  needsBackfill = false;

  constructor(
    private readonly ctx: AppContext,
    /** The provider in use (it may change once, at start-up: runtime.ts `initMemory`). */
    private readonly embedder: () => EmbeddingProvider,
    private readonly ready: Promise<void>,
    private readonly backfill: () => Promise<number>,
    batchSize = 64,
    /** Longest a queued memory waits for companions before its batch is written, ms. */
    flushDelayMs = 50,
  ) {
    // per-batch costs (an embedding call, parse/plan/commit) are paid once per batch; writeBatch
    // never rejects, so the batcher's one-at-a-time retry never runs
    this.batcher = new WriteBatcher({ write: (items) => this.writeBatch(items), maxBatch: batchSize, delayMs: flushDelayMs, gather: false });
  }

  /** Queue one memory. O(1); never throws. */
  enqueue(item: PendingMemory): void {
    if (this.batcher.pending >= MAX_PENDING) {
      if (this.dropped++ % 1000 === 0) this.ctx.log.warn({ pending: this.batcher.pending }, 'memory writer queue full: dropping execution memories');
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
    await this.store(batch);
    if (this.needsBackfill) {
      try {
        const left = await this.backfill();
        this.needsBackfill = left > 0;
      } catch (err) {
        this.ctx.log.warn({ err: (err as Error).message }, 'memory embedding back-fill failed');
      }
    }
  }

  private async store(batch: PendingMemory[]): Promise<void> {
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
    let vectors: Array<Float32Array | null>;
    try {
      vectors = await this.embedder().embed(rows.map((r) => r.content));
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message, count: rows.length }, 'embedding failed: storing execution memories without vectors');
      vectors = rows.map(() => null);
      this.needsBackfill = true;
    }
    // PGlite runs each statement on this thread, and every row costs an HNSW insertion (~2–3 ms):
    // small statements with a turn of the event loop between them keep requests from waiting
    // behind a whole batch. PostgreSQL works in its own processes: one statement per batch.
    const step = this.ctx.database.engine === 'pglite' ? PGLITE_ROWS_PER_STATEMENT : rows.length;
    for (let at = 0; at < rows.length; at += step) {
      if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      await this.insert(rows.slice(at, at + step), vectors.slice(at, at + step));
    }
  }

  private async insert(rows: NewMemoryRow[], vectors: Array<Float32Array | null>): Promise<void> {
    try {
      await insertMemoryRows(this.ctx, this.ctx.database.hotDb, rows, vectors);
    } catch {
      // one bad row (e.g. its user was deleted meanwhile) must not cost the others: retry one by one
      for (let i = 0; i < rows.length; i++) {
        try {
          await insertMemoryRows(this.ctx, this.ctx.database.hotDb, [rows[i]], [vectors[i]]);
        } catch (err) {
          this.ctx.log.error({ err: (err as Error).message, execution_id: rows[i].executionId }, 'could not store an execution memory');
        }
      }
    }
  }
}
