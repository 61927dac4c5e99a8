/**
 * Per-app state of the memory module: the typed `AppContext.memory` field (no module-level
 * `WeakMap<AppContext, …>`), created by `runtime.ts` on first use. This file imports nothing that
 * imports `context.ts`, so `context.ts` can name its types without an import loop.
 */
import type { EmbeddingBackfill } from './backfill.js';
import type { EmbeddingProvider } from './embeddings.js';
import type { TextIndex } from './text-index.js';
import type { VectorCache } from './vector-cache.js';
import type { MemoryKind } from './kinds.js';
import type { LRUCache } from 'lru-cache';

/** A memory row to insert (the id and timestamp are given by the caller). */
export interface NewMemoryRow {
  id: string;
  userId: string;
  sessionId: string | null;
  agentId: string | null;
  serviceId: string | null;
  toolId: string | null;
  executionId: string | null;
  source: 'explicit' | 'execution' | 'summary';
  /** What it is (kinds.ts): `execution` for the hook's, `summary` for summaries, else `note`. */
  kind: MemoryKind;
  content: string;
  metadata: Record<string, unknown>;
  /** When what it records happened (null/absent: when it is stored). */
  occurredAt?: Date | null;
}

/** A memory to write; `build` runs in the writer's flush, off the request path. */
export interface PendingMemory {
  build(): NewMemoryRow;
}

/** What the runtime needs of the batching writer (`MemoryWriter`, writer.ts). */
export interface MemoryWriterPort {
  /** Queue one memory. O(1); never throws. */
  enqueue(item: PendingMemory): void;
  /** Resolve when everything queued so far is written (or has failed and been logged). */
  drain(): Promise<void>;
  /** Memories queued, not yet handed to an INSERT. */
  readonly pending: number;
}

/** The memory module's per-app state. */
export interface MemoryRuntime {
  /**
   * The embedding provider: the configured one, or — when the provider is only the default and the
   * store was embedded with the earlier default — a local embedder of the stored space (`initMemory`).
   */
  embedder: EmbeddingProvider;
  /**
   * Weight of the vector arm in the fusion when it differs from `config.memory.fusion.vectorWeight`:
   * set only when the store keeps the earlier local space (`fusion.localVectorWeight`).
   */
  vectorWeight?: number;
  /** Batching writer of automatic (execution) memories (stored without a vector). */
  writer: MemoryWriterPort;
  /** Background embedding of memories stored without a vector. */
  backfill: EmbeddingBackfill;
  /** Settles when the start-up check of the stored embedding space (`initMemory`) is done; rejects if it failed. */
  ready: Promise<void>;
  markReady(err?: Error): void;
  /** Vectors of recent search queries, by query text (least recently used first; `embedQuery`). */
  queryVectors: LRUCache<string, Float32Array>;
  /** Users' vectors for the in-process vector arm (PGlite only; null on PostgreSQL). */
  vectors: VectorCache | null;
  /** Users' full-text postings for the in-process text arm (PGlite only; null on PostgreSQL). */
  text: TextIndex | null;
}
