/**
 * Tables of the search module: `tool_vectors`, one sentence vector per tool for the semantic arm of
 * tool search (migration 0034). Read and written with raw SQL by
 * `modules/search/semantic.ts`.
 */
import { index, pgTable, text } from 'drizzle-orm/pg-core';
import { bytea, updatedAt } from './columns.js';
import { tools } from './registry.js';

export const toolVectors = pgTable(
  'tool_vectors',
  {
    toolId: text('tool_id')
      .primaryKey()
      .references(() => tools.id, { onDelete: 'cascade' }),
    /** Encoder that produced the vector (`universal-sentence-encoder-lite`). */
    model: text('model').notNull(),
    /** SHA-256 (hex) of the model name and the embedded text. */
    sourceHash: text('source_hash').notNull(),
    /** Unit-length float32 components, little-endian. */
    vector: bytea('vector').notNull(),
    updatedAt: updatedAt(),
  },
  (t) => [index('tool_vectors_source_hash_idx').on(t.sourceHash)],
);
